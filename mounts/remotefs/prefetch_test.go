package remotefs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// countOpens counts the opens and listings the peer's mount is asked
// for, quiet (a read-ahead's) or not.
type countOpens struct {
	mounts.FS
	n     atomic.Int64
	quiet atomic.Int64
	dirs  atomic.Int64
}

func (c *countOpens) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	c.dirs.Add(1)
	return c.FS.ReadDir(ctx, name)
}

func (c *countOpens) OpenQuiet(ctx context.Context, name string) (mounts.File, error) {
	c.n.Add(1)
	c.quiet.Add(1)
	return c.FS.(mounts.QuietReadFS).OpenQuiet(ctx, name)
}

func (c *countOpens) ReadDirQuiet(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	c.dirs.Add(1)
	return c.FS.(mounts.QuietReadFS).ReadDirQuiet(ctx, name)
}

func (c *countOpens) Open(ctx context.Context, name string) (mounts.File, error) {
	c.n.Add(1)
	return c.FS.Open(ctx, name)
}

// countedLink mounts a peer of dir whose opens and listings are counted.
func countedLink(t *testing.T, dir string) (*remotefs.FS, *countOpens) {
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	peerFS := &countOpens{FS: host}
	// The bound of a healthy link, not the fault tests' short one: a
	// loaded machine (a race run beside others) is no fault here.
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(serveLink(t, dir, peerFS).dial), Source: "test-peer", Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	return fsys.(*remotefs.FS), peerFS
}

// waitReadAhead waits until a read-ahead ran and ended.
func waitReadAhead(t *testing.T, fsys mounts.FS) {
	t.Helper()
	require.Eventually(t, func() bool {
		done, n := remotefs.ReadAheadDone(fsys)
		return done && n > 0
	}, 10*time.Second, 5*time.Millisecond, "a read-ahead ran and ended")
}

func readAll(t *testing.T, fsys mounts.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(context.Background(), name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	require.NoError(t, err)
	return string(b)
}

// Reading a small file of a directory reads the directory's subtree ahead,
// in one chain of requests: the files after it are then opened and read
// with no round trip, and a change made on the remote machine afterwards
// is still seen (the change stream drops what was read ahead).
func TestReadAhead(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for d := range 4 {
		for i := range 40 {
			files[fmt.Sprintf("top/d%d/f%02d.txt", d, i)] = fmt.Sprintf("file %d of d%d\n", i, d)
			files[fmt.Sprintf("top/d%d/sub/g%02d.txt", d, i)] = fmt.Sprintf("nested %d of d%d\n", i, d)
		}
	}
	for name, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	fsys, peerFS := countedLink(t, dir)
	ctx := context.Background()

	_, err := fsys.ReadDir(ctx, "top/d1")
	require.NoError(t, err)
	assert.Equal(t, files["top/d1/f00.txt"], readAll(t, fsys, "top/d1/f00.txt"))
	waitReadAhead(t, fsys)
	_, requests := remotefs.ReadAheadDone(fsys)
	assert.EqualValues(t, 1, requests, "80 small files: one request")

	before, beforeDirs := peerFS.n.Load(), peerFS.dirs.Load()
	for i := range 40 {
		for _, name := range []string{fmt.Sprintf("top/d1/f%02d.txt", i), fmt.Sprintf("top/d1/sub/g%02d.txt", i)} {
			ents, err := fsys.ReadDir(ctx, filepath.Dir(name))
			require.NoError(t, err)
			require.Len(t, ents, map[bool]int{true: 41, false: 40}[filepath.Dir(name) == "top/d1"])
			assert.Equal(t, files[name], readAll(t, fsys, name))
		}
	}
	assert.Equal(t, before, peerFS.n.Load(), "the subtree read ahead is read with no open on the peer")
	assert.Equal(t, beforeDirs, peerFS.dirs.Load(), "and listed with no listing on the peer")

	// d0 was not read ahead: its files are still asked for.
	assert.Equal(t, files["top/d0/f05.txt"], readAll(t, fsys, "top/d0/f05.txt"))
	assert.Greater(t, peerFS.n.Load(), before)

	// A program walking down from the top (tar: "." — listed at the
	// mount —, "top", "top/d2", "top/d2/sub") has its read-ahead start at
	// the top: d3, never asked for, comes too.
	for _, d := range []string{"top", "top/d2", "top/d2/sub"} {
		_, err := fsys.ReadDir(ctx, d)
		require.NoError(t, err)
	}
	assert.Equal(t, files["top/d2/sub/g00.txt"], readAll(t, fsys, "top/d2/sub/g00.txt"))
	require.Eventually(t, func() bool {
		done, n := remotefs.ReadAheadDone(fsys)
		return done && n > requests
	}, 10*time.Second, 5*time.Millisecond, "a second read-ahead ran and ended")
	before = peerFS.n.Load()
	for i := range 40 {
		assert.Equal(t, files[fmt.Sprintf("top/d3/sub/g%02d.txt", i)], readAll(t, fsys, fmt.Sprintf("top/d3/sub/g%02d.txt", i)))
	}
	assert.Equal(t, before, peerFS.n.Load(), "d3, beside the walk's start, was read ahead too")

	// A change on the remote machine after the read-ahead is seen.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "top/d1/f07.txt"), []byte("changed there\n"), 0o644))
	require.Eventually(t, func() bool { return readAll(t, fsys, "top/d1/f07.txt") == "changed there\n" },
		5*time.Second, 10*time.Millisecond, "a file read ahead, changed on the remote machine")
}

// A large file whose attributes are known (its directory was listed) is
// opened on the peer at its first read, not at its open: a program that
// opens it and finds its pages kept by the kernel costs no round trip.
func TestLargeFileOpenedAtFirstRead(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), big, 0o644))
	fsys, peerFS := countedLink(t, dir)
	ctx := context.Background()

	_, err := fsys.ReadDir(ctx, ".")
	require.NoError(t, err)
	f, err := fsys.Open(ctx, "big")
	require.NoError(t, err)
	a, err := f.Stat()
	require.NoError(t, err)
	assert.EqualValues(t, len(big), a.Size)
	assert.Zero(t, peerFS.n.Load(), "not opened on the peer yet")
	b := make([]byte, 100)
	_, err = f.ReadAt(b, 1000)
	require.NoError(t, err)
	assert.Equal(t, big[1000:1100], b)
	assert.EqualValues(t, 1, peerFS.n.Load(), "opened at the first read")
	require.NoError(t, f.Close())

	// Gone on the remote machine before the first read: the read says so.
	f, err = fsys.Open(ctx, "big")
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "big")))
	_, err = f.ReadAt(b, 0)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, f.Close())
}

// What a read-ahead reads, no program has read: the access times of the
// files and directories it read stay as they were on the remote side.
func TestReadAheadLeavesAccessTimes(t *testing.T) {
	dir := t.TempDir()
	old := time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	for _, name := range []string{"d/a.txt", "d/b.txt", "d/sub/c.txt"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
	}
	fsys, peerFS := countedLink(t, dir)
	ctx := context.Background()
	for _, name := range []string{"d/b.txt", "d/sub/c.txt", "d/sub"} {
		// Before the mtime: a relatime read would move it. (After the
		// peer's watch walked the tree: its inotify set-up lists
		// directories.)
		require.NoError(t, os.Chtimes(filepath.Join(dir, name), old, time.Now()))
	}
	_, err := fsys.ReadDir(ctx, "d")
	require.NoError(t, err)
	assert.Equal(t, "d/a.txt", readAll(t, fsys, "d/a.txt"))
	waitReadAhead(t, fsys)
	assert.GreaterOrEqual(t, peerFS.quiet.Load(), int64(2), "b.txt and sub/c.txt were read ahead")
	for _, name := range []string{"d/b.txt", "d/sub/c.txt", "d/sub"} {
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(filepath.Join(dir, name), &st))
		assert.Equal(t, old.Unix(), st.Atim.Sec, "the access time of %s", name)
	}
}

// gatedLists holds the quiet listings of directories named top* until
// two are held at once (then none more), or a while has passed (a
// read-ahead asking one at a time), and records how many were held at
// once at most.
type gatedLists struct {
	*countOpens
	mu      sync.Mutex
	held    int
	most    int
	arrived chan struct{}
}

func (g *gatedLists) ReadDirQuiet(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	g.mu.Lock()
	hold := strings.HasPrefix(path.Base(name), "top") && g.most < 2
	if hold {
		g.held++
		g.most = max(g.most, g.held)
	}
	g.mu.Unlock()
	if hold {
		select {
		case g.arrived <- struct{}{}: // wakes one held already
		case <-g.arrived:
		case <-time.After(5 * time.Second):
		}
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}
	return g.countOpens.ReadDirQuiet(ctx, name)
}

// wideTree fills dir with a.txt, three files at the top that a read-ahead's
// first request stops after, and six directories top0…top5 of four files
// each; it returns the content of all but a.txt (100 KiB, past the first
// request's size in a few files).
func wideTree(t *testing.T, dir string) string {
	t.Helper()
	data := strings.Repeat("x", 100<<10)
	for d := range 6 {
		for f := range 4 {
			name := filepath.Join(dir, fmt.Sprintf("top%d/f%d.txt", d, f))
			require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
			require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("start"), 0o644))
	for i := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.txt", i)), []byte(data), 0o644))
	}
	return data
}

// A read-ahead keeps several requests in flight, each for other
// directories: the link's round trip is not paid once per request.
func TestReadAheadRequestsInFlight(t *testing.T) {
	dir := t.TempDir()
	data := wideTree(t, dir)
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	peerFS := &gatedLists{countOpens: &countOpens{FS: host}, arrived: make(chan struct{})}
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(serveLink(t, dir, peerFS).dial), Source: "test-peer", Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	_, err = fsys.ReadDir(context.Background(), ".")
	require.NoError(t, err)
	assert.Equal(t, "start", readAll(t, fsys, "a.txt"))
	waitReadAhead(t, fsys)
	peerFS.mu.Lock()
	most := peerFS.most
	peerFS.mu.Unlock()
	assert.GreaterOrEqual(t, most, 2, "the read-ahead asked for directories two at a time at least")
	before := peerFS.n.Load()
	for d := range 6 {
		for f := range 4 {
			assert.Equal(t, data, readAll(t, fsys, fmt.Sprintf("top%d/f%d.txt", d, f)))
		}
	}
	assert.Equal(t, before, peerFS.n.Load(), "every file was read ahead")
}

// readWhole reads name to its end.
func readWhole(t *testing.T, fsys mounts.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(context.Background(), name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	require.NoError(t, err)
	return b
}

// The large files a read-ahead's walk passes are opened ahead on the
// peer, two at a time, their first chunks asked for: the reader that
// opens such a name takes that file rather than opening it again, and the
// next large file of the walk is opened in its place. One whose file
// changed since is not handed over: the reader opens the name anew and
// reads what it holds now.
func TestLargeFilesOpenedAhead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/a.txt"), []byte("start"), 0o644))
	big := map[string][]byte{}
	for i, name := range []string{"d/big1", "d/big2", "d/big3"} {
		data := bytes.Repeat([]byte{byte('a' + i)}, 2<<20+i)
		big[name] = data
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	fsys, peerFS := countedLink(t, dir)
	// The readers' opens: those of the read-ahead, a file opened ahead
	// included, are quiet.
	opens := func() int64 { return peerFS.n.Load() - peerFS.quiet.Load() }
	_, err := fsys.ReadDir(context.Background(), "d")
	require.NoError(t, err)
	start := opens() + 1 // a.txt's own
	assert.Equal(t, "start", readAll(t, fsys, "d/a.txt"))
	waitReadAhead(t, fsys)
	require.Eventually(t, func() bool { return remotefs.OpenedAhead(fsys) == 2 }, 10*time.Second, time.Millisecond,
		"two large files opened ahead")

	assert.True(t, bytes.Equal(big["d/big1"], readWhole(t, fsys, "d/big1")))
	// big1 was taken: big3 is opened ahead in its place.
	require.Eventually(t, func() bool { return remotefs.OpenedAhead(fsys) == 2 }, 10*time.Second, time.Millisecond,
		"the next large file opened ahead")
	assert.True(t, bytes.Equal(big["d/big3"], readWhole(t, fsys, "d/big3")))
	assert.Equal(t, start, opens(), "the readers took the files opened ahead")

	// big2 is replaced on the remote machine (a new file renamed over
	// it): the file opened ahead is not the one to read any more.
	changed := bytes.Repeat([]byte{'z'}, 3<<20)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big2.new"), changed, 0o644))
	require.NoError(t, os.Rename(filepath.Join(dir, "big2.new"), filepath.Join(dir, "d/big2")))
	require.Eventually(t, func() bool {
		a, err := fsys.Stat(context.Background(), "d/big2")
		return err == nil && a.Size == int64(len(changed))
	}, 10*time.Second, time.Millisecond, "the change stream tells of the change")
	assert.True(t, bytes.Equal(changed, readWhole(t, fsys, "d/big2")), "what big2 holds now")
	assert.Equal(t, start+1, opens(), "big2 was opened anew")
}

// gatedReads holds every read of the file "big" on the peer until release
// is closed; entered is closed at the first.
type gatedReads struct {
	*countOpens
	once             sync.Once
	entered, release chan struct{}
}

func (g *gatedReads) Open(ctx context.Context, name string) (mounts.File, error) {
	f, err := g.countOpens.Open(ctx, name)
	if err != nil || name != "big" {
		return f, err
	}
	return &gatedFile{File: f, g: g}, nil
}

type gatedFile struct {
	mounts.File
	g *gatedReads
}

func (f *gatedFile) ReadAt(p []byte, off int64) (int, error) {
	f.g.once.Do(func() { close(f.g.entered) })
	<-f.g.release
	return f.File.ReadAt(p, off)
}

// While a large file's chunks are on their way, the read-ahead keeps one
// request in flight, not three: the link carries what a reader waits for
// first.
func TestReadAheadYieldsToChunks(t *testing.T) {
	dir := t.TempDir()
	wideTree(t, dir)
	bigData := bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), bigData, 0o644))
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	peerFS := &gatedReads{countOpens: &countOpens{FS: host}, entered: make(chan struct{}), release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(peerFS.release) })
	t.Cleanup(released)
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(serveLink(t, dir, peerFS).dial), Source: "test-peer", Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	_, err = fsys.ReadDir(context.Background(), ".")
	require.NoError(t, err)

	read := make(chan []byte, 1)
	go func() {
		f, err := fsys.Open(context.Background(), "big")
		if err != nil {
			read <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
		read <- b
	}()
	select {
	case <-peerFS.entered: // its first chunk is held on the peer
	case <-time.After(10 * time.Second):
		t.Fatal("the large file's first read never reached the peer")
	}
	assert.Equal(t, "start", readAll(t, fsys, "a.txt"))
	waitReadAhead(t, fsys)
	assert.EqualValues(t, 1, remotefs.AheadBesideChunks(fsys), "read-ahead requests in flight at once while chunks were out")
	released()
	assert.True(t, bytes.Equal(bigData, <-read), "the large file read whole")
}

// heldListings holds the peer's quiet listings (the read-ahead's) until
// release is closed.
type heldListings struct {
	*countOpens
	release chan struct{}
}

func (h *heldListings) ReadDirQuiet(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	<-h.release
	return h.countOpens.ReadDirQuiet(ctx, name)
}

// While the read-ahead an open asked for has not answered, the next open
// of a small file in the same directory waits for that answer, which
// brings it, rather than asking the peer itself.
func TestOpenWaitsForTheFirstAnswer(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	for _, n := range []string{"a", "b", "c"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "d", n+".txt"), []byte(n), 0o644))
	}
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	peerFS := &heldListings{countOpens: &countOpens{FS: host}, release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(peerFS.release) })
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(serveLink(t, dir, peerFS).dial), Source: "test-peer", Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	t.Cleanup(released)
	_, err = fsys.ReadDir(context.Background(), "d")
	require.NoError(t, err)
	opens := func() int64 { return peerFS.n.Load() - peerFS.quiet.Load() }

	assert.Equal(t, "a", readAll(t, fsys, "d/a.txt")) // asks the peer, and starts the read-ahead
	before := opens()
	got := make(chan string, 1)
	go func() {
		f, err := fsys.Open(context.Background(), "d/b.txt")
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(io.NewSectionReader(f, 0, 100))
		got <- string(b)
	}()
	require.Eventually(t, func() bool { return remotefs.WaitedFirst(fsys) == 1 }, 10*time.Second, time.Millisecond,
		"the open of b waits for the read-ahead's first answer")
	released()
	assert.Equal(t, "b", <-got)
	assert.Equal(t, before, opens(), "b came with the read-ahead, not an open of its own")
	waitReadAhead(t, fsys)
}

// bigOpens counts the peer's opens of d/big, quiet or not.
type bigOpens struct {
	*countOpens
	n atomic.Int64
}

func (b *bigOpens) Open(ctx context.Context, name string) (mounts.File, error) {
	if name == "d/big" {
		b.n.Add(1)
	}
	return b.countOpens.Open(ctx, name)
}

func (b *bigOpens) OpenQuiet(ctx context.Context, name string) (mounts.File, error) {
	if name == "d/big" {
		b.n.Add(1)
	}
	return b.countOpens.OpenQuiet(ctx, name)
}

// A large file opened ahead is opened quietly: until a program reads it,
// its access time stays as it was, as for what the read-ahead reads.
func TestOpenedAheadLeavesAccessTimes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/a.txt"), []byte("start"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/big"), bytes.Repeat([]byte("b"), 2<<20), 0o644))
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	peerFS := &bigOpens{countOpens: &countOpens{FS: host}}
	fsys, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(serveLink(t, dir, peerFS).dial), Source: "test-peer", Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*remotefs.FS).Close() })
	old := time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	told := make(chan struct{}, 1)
	fsys.(*remotefs.FS).OnChange(func(names ...string) {
		if slices.Contains(names, "d/big") {
			select {
			case told <- struct{}{}:
			default:
			}
		}
	})
	// Before the mtime: a relatime read would move it.
	require.NoError(t, os.Chtimes(filepath.Join(dir, "d/big"), old, time.Now()))
	select {
	// Told before the read-ahead lists d: a name changed since its
	// listing is not opened ahead.
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the change stream never told of the new times")
	}
	_, err = fsys.ReadDir(context.Background(), "d")
	require.NoError(t, err)
	assert.Equal(t, "start", readAll(t, fsys, "d/a.txt"))
	waitReadAhead(t, fsys)
	require.Eventually(t, func() bool { return peerFS.n.Load() == 1 && remotefs.ChunksOut(fsys) == 0 },
		10*time.Second, time.Millisecond, "big opened ahead and its first chunks read")
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(dir, "d/big"), &st))
	assert.Equal(t, old.Unix(), st.Atim.Sec, "big's access time")
}
