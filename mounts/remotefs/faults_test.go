package remotefs_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// stallConn passes bytes until stalled; then nothing moves either way,
// as on a link whose cable was pulled (no reset, no close).
type stallConn struct {
	net.Conn
	mu      sync.Mutex
	stalled chan struct{} // non-nil while stalled
}

func (c *stallConn) gate() {
	c.mu.Lock()
	ch := c.stalled
	c.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (c *stallConn) Read(p []byte) (int, error)  { c.gate(); return c.Conn.Read(p) }
func (c *stallConn) Write(p []byte) (int, error) { c.gate(); return c.Conn.Write(p) }

// Close ends the stall too: closing a connection unblocks what waits on
// it, as a closed socket does.
func (c *stallConn) Close() error {
	c.stall(false)
	return c.Conn.Close()
}

func (c *stallConn) stall(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case on && c.stalled == nil:
		c.stalled = make(chan struct{})
	case !on && c.stalled != nil:
		close(c.stalled)
		c.stalled = nil
	}
}

// stallLink dials through stallConns.
type stallLink struct {
	*link
	mu    sync.Mutex
	conns []*stallConn
}

func (s *stallLink) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	rwc, err := s.link.dial(ctx)
	if err != nil {
		return nil, err
	}
	c := &stallConn{Conn: rwc.(net.Conn)}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	return c, nil
}

func (s *stallLink) stallAll(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.stall(on)
	}
}

const faultTimeout = 500 * time.Millisecond

func openWith(t *testing.T, dial func(ctx context.Context) (io.ReadWriteCloser, error)) *remotefs.FS {
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer", Timeout: faultTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	return fsys.(*remotefs.FS)
}

// isLinkDown: the error of an operation on a link that is down is an EIO
// that says so, as a *fs.PathError.
func isLinkDown(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, remotefs.ErrLinkDown)
	assert.ErrorIs(t, err, syscall.EIO)
	var pe *os.PathError
	assert.ErrorAs(t, err, &pe)
}

// A link cut mid-session: operations fail at once (the stream ended) or
// within the timeout (dials refused), never hang; the mount dials again
// with backoff and serves without a remount, forgetting what it cached.
func TestLinkCutAndRestored(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("one"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	l := newLink(t, dir)
	fsys := openWith(t, l.dial)
	ctx := context.Background()
	_, err := fsys.Stat(ctx, "a")
	require.NoError(t, err)

	l.refuse(true)
	l.cut()
	start := time.Now()
	_, err = fsys.ReadDir(ctx, "sub") // never listed: only the peer can answer
	isLinkDown(t, err)
	// Bounded by the timeout; the margin is for a slow machine, the
	// point is that it returns at all.
	assert.Less(t, time.Since(start), 4*faultTimeout+2*time.Second, "bounded by the timeout")
	_, err = fsys.Stat(ctx, "a")
	isLinkDown(t, err) // nothing served from before the cut

	// Changed while the link was down; seen once it is up again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("three"), 0o644))
	l.refuse(false)
	require.Eventually(t, func() bool {
		a, err := fsys.Stat(ctx, "a")
		return err == nil && a.Size == 5
	}, 10*time.Second, 10*time.Millisecond, "the mount serves again")
}

// A link that goes silent (no reset): a pending operation fails within the
// timeout, and a write sent but never confirmed is the writer's error at
// close, never dropped silently.
func TestSilentLinkUnconfirmedWrite(t *testing.T) {
	dir := t.TempDir()
	l := &stallLink{link: newLink(t, dir)}
	fsys := openWith(t, l.dial)
	ctx := context.Background()
	f, err := fsys.OpenFile(ctx, "w", os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	wf := f.(mounts.WritableFile)
	l.refuse(true) // no new link either
	l.stallAll(true)
	_, err = wf.WriteAt([]byte("never confirmed"), 0) // pipelined: accepted here
	if err != nil {
		isLinkDown(t, err)
	}
	start := time.Now()
	err = wf.Close()
	isLinkDown(t, err)
	assert.Less(t, time.Since(start), 4*faultTimeout+2*time.Second, "no hang")
	l.stallAll(false)
}

// fsync answers only once the peer synced: the bytes are in the remote
// file when Sync returns.
func TestSyncIsOnTheRemoteDisk(t *testing.T) {
	dir := t.TempDir()
	fsys := openWith(t, newLink(t, dir).dial)
	f, err := fsys.OpenFile(context.Background(), "d", os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	wf := f.(mounts.WritableFile)
	for i := range 64 {
		_, err := wf.WriteAt([]byte("0123456789abcdef"), int64(i*16))
		require.NoError(t, err)
	}
	require.NoError(t, wf.Sync())
	b, err := os.ReadFile(filepath.Join(dir, "d"))
	require.NoError(t, err)
	assert.Len(t, b, 1024)
	require.NoError(t, wf.Close())
}

// The served directory removed under a reader: clear errors, no hang.
func TestRemoteDirRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "served")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), make([]byte, 1<<20), 0o644))
	fsys := openWith(t, newLink(t, dir).dial)
	ctx := context.Background()
	f, err := fsys.Open(ctx, "sub/f")
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))
	// The open file still reads (POSIX: the file lives while open).
	buf := make([]byte, 10)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Eventually(t, func() bool {
		_, err := fsys.Stat(ctx, "sub/f")
		return errors.Is(err, os.ErrNotExist)
	}, 5*time.Second, 10*time.Millisecond, "the change stream reports the removal")
	_, err = fsys.ReadDir(ctx, ".")
	assert.Error(t, err)
}

// Changes made on the remote machine by anyone else reach the cache
// through the change stream: a listing and a stat cached before see them.
func TestChangeStream(t *testing.T) {
	dir := t.TempDir()
	fsys := openWith(t, newLink(t, dir).dial)
	ctx := context.Background()
	changed := make(chan string, 16)
	fsys.OnChange(func(names ...string) {
		for _, n := range names {
			changed <- n
		}
	})
	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	require.Empty(t, ents)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), []byte("1"), 0o644))
	select {
	case n := <-changed:
		assert.Equal(t, "x", n)
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
	}
	ents, err = fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, "x", ents[0].Name)
}

// Writes are pipelined, yet whatever follows a write sees it: a read
// through another handle, a stat, a listing.
func TestWriteSeenThroughAnyHandle(t *testing.T) {
	fsys := openWith(t, newLink(t, t.TempDir()).dial)
	ctx := context.Background()
	f, err := fsys.OpenFile(ctx, "f", os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	wf := f.(mounts.WritableFile)
	chunk := make([]byte, 64<<10)
	for i := range 64 {
		chunk[0] = byte(i)
		_, err := wf.WriteAt(chunk, int64(i)*int64(len(chunk)))
		require.NoError(t, err)
	}
	a, err := fsys.Stat(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, int64(64*len(chunk)), a.Size)
	r, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = r.ReadAt(b, 63*int64(len(chunk)))
	require.NoError(t, err)
	assert.Equal(t, byte(63), b[0])
	require.NoError(t, r.Close())
	require.NoError(t, wf.Close())
}

// slowConn delivers what it reads delay late: a link with latency.
// once slow is set.
type slowConn struct {
	io.ReadWriteCloser
	delay time.Duration
	slow  *atomic.Bool
}

func (c slowConn) Read(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(p)
	if c.slow.Load() {
		time.Sleep(c.delay)
	}
	return n, err
}

// A link idle for longer than the timeout is not declared lost by the
// first request after it, answered a little later than a monitor tick:
// silence counts from when an answer was awaited, not from the last
// message.
func TestIdleThenSlowAnswer(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644))
	l := newLink(t, dir)
	var slow atomic.Bool
	fsys := openWith(t, func(ctx context.Context) (io.ReadWriteCloser, error) {
		c, err := l.dial(ctx)
		if err != nil {
			return nil, err
		}
		// Later than a monitor tick (a quarter of the timeout).
		return slowConn{c, faultTimeout / 4 * 3 / 2, &slow}, nil
	})
	ctx := context.Background()
	slow.Store(true)
	time.Sleep(3 * faultTimeout) // idle, nothing pending
	_, err := fsys.Stat(ctx, "a")
	require.NoError(t, err)
	_, err = fsys.Stat(ctx, "a")
	require.NoError(t, err)
}
