package remotefs_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// A new mount is served one round trip after the peer starts: the change
// stream's request goes out behind the daemon's hello, before the peer's
// has come, and its answer brings the root's attributes and listing. The
// link here holds the peer's hello back until the daemon's first request
// has passed (a daemon that waited for it would never get it), and the
// root's stat and listing then cost no request.
func TestConnectSendsTheChangeStreamBehindTheHello(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("abc"), 0o644))
	l := newLink(t, dir)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		toPeer, err := l.dial(ctx)
		if err != nil {
			return nil, err
		}
		daemon, relay := net.Pipe()
		requested := make(chan struct{})
		go func() { // daemon to peer, noting the first byte past the hello line
			defer toPeer.Close()
			hello, asked := false, false
			buf := make([]byte, 64<<10)
			for {
				n, err := relay.Read(buf)
				chunk := buf[:n]
				if !hello {
					if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
						hello, chunk = true, chunk[i+1:]
					}
				}
				if hello && len(chunk) > 0 && !asked {
					asked = true
					close(requested)
				}
				if n > 0 {
					if _, werr := toPeer.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // peer to daemon, from the daemon's first request on
			defer relay.Close()
			select {
			case <-requested:
			case <-stop:
				return
			}
			_, _ = io.Copy(relay, toPeer)
		}()
		return daemon, nil
	}
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer",
		Timeout: time.Second, Build: "test"})
	require.NoError(t, err, "the daemon waited for the peer's hello before its first request")
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })

	before := remotefs.Requests(fsys)
	ctx := context.Background()
	a, err := fsys.Stat(ctx, ".")
	require.NoError(t, err)
	assert.True(t, a.IsDir())
	ents, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, "a.txt", ents[0].Name)
	assert.Equal(t, before, remotefs.Requests(fsys), "the root's stat and listing came with the change stream's answer")
	got, err := mounts.ReadFile(ctx, fsys, "a.txt")
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
}

// The dial carries the daemon's hello and its first request, the change
// stream's: over ssh they go with the start of the peer, which reads them
// as it starts, rather than a round trip after it.
func TestDialCarriesTheHelloAndTheChangeStream(t *testing.T) {
	dir := t.TempDir()
	l := newLink(t, dir)
	var firsts [][]byte
	dial := func(ctx context.Context, first []byte) (io.ReadWriteCloser, error) {
		firsts = append(firsts, bytes.Clone(first))
		return remotefs.StreamDialer(l.dial)(ctx, first)
	}
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: dial, Source: "test-peer",
		Timeout: time.Second, Build: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })
	require.Len(t, firsts, 1)
	hello, rest, ok := bytes.Cut(firsts[0], []byte("\n"))
	require.True(t, ok, "first holds the hello line")
	assert.Equal(t, strings.TrimSuffix(wire.Hello("test"), "\n"), string(hello))
	var req wire.Request
	require.NoError(t, wire.NewCodec(bytes.NewReader(rest), io.Discard).Recv(&req), "first holds a request after the hello")
	assert.Equal(t, wire.OpWatch, req.Op)
}

// backStream is a link whose channel carries connections back once
// release is closed (an ssh server answering the forwarding request).
type backStream struct {
	io.ReadWriteCloser
	release chan struct{}
	l       net.Listener
}

func (b *backStream) BackListener() net.Listener {
	<-b.release
	return b.l
}

// A mount is ready without waiting for the back link; what needs it (the
// brief's ShowsWorkspace, a command) waits for it.
func TestMountReadyBeforeTheBackLink(t *testing.T) {
	dir := t.TempDir()
	l := newLink(t, dir)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "back.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	release := make(chan struct{})
	dial := func(ctx context.Context, first []byte) (io.ReadWriteCloser, error) {
		rwc, err := remotefs.StreamDialer(l.dial)(ctx, first)
		if err != nil {
			return nil, err
		}
		return &backStream{ReadWriteCloser: rwc, release: release, l: ln}, nil
	}
	opened := make(chan error, 1)
	var fsys mounts.FS
	go func() {
		var err error
		fsys, err = remotefs.Open(context.Background(), remotefs.Options{Dial: dial, Source: "test-peer",
			Timeout: 10 * time.Second, Build: "test"})
		opened <- err
	}()
	select {
	case err := <-opened:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the mount waited for the back link")
	}
	t.Cleanup(func() { fsys.(interface{ Close() error }).Close() })
	shows := make(chan bool, 1)
	go func() { shows <- fsys.(*remotefs.FS).ShowsWorkspace() }()
	require.Eventually(t, func() bool { return remotefs.BackWaiting(fsys) == 1 }, 10*time.Second, time.Millisecond,
		"ShowsWorkspace waits for the back link")
	// A command may connect back for the rest of the workspace: it is
	// not started before the back link is known either.
	started := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		p, err := fsys.(*remotefs.FS).StartCommand(context.Background(), mounts.Command{Argv: []string{"echo", "ran"}, Dir: ".", Stdout: &out})
		if err == nil {
			_, _, err = p.Wait()
		}
		started <- err
	}()
	require.Eventually(t, func() bool { return remotefs.BackWaiting(fsys) == 2 }, 10*time.Second, time.Millisecond,
		"the command waits for the back link")
	select {
	case <-shows:
		t.Fatal("ShowsWorkspace answered before the back link was known")
	case <-started:
		t.Fatal("a command ran before the back link was known")
	default:
	}
	close(release)
	assert.True(t, <-shows, "the link carries connections back")
	require.NoError(t, <-started)
	assert.Equal(t, "ran\n", out.String())
}

// A stream that never says hello (a command that waits for something
// else, a server that swallows the peer's output): the mount fails within
// its bound, saying so, and nothing is left running.
func TestConnectNoHello(t *testing.T) {
	var conns []net.Conn
	ended := make(chan struct{}, 8)
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		conns = append(conns, b)
		go func() { // takes what is sent, says nothing
			_, _ = io.Copy(io.Discard, b)
			ended <- struct{}{}
		}()
		return a, nil
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	start := time.Now()
	_, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer",
		Timeout: 100 * time.Millisecond, Build: "test"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sent no hello")
	assert.Less(t, time.Since(start), 5*time.Second, "bounded by the mount's timeout")
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was left open")
	}
}
