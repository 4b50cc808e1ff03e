package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/readpattern"
	"github.com/vfsmount/vfsmount/union"
)

// countingFS counts the files opened through it and closes them as they
// are closed, so a test can tell whether the kernel asked before opening.
// kept counts the opens whose options say the kernel keeps the pages
// (mounts.OpenOptions.PagesKept).
type countingFS struct {
	describedFS
	opens, open, kept atomic.Int64
}

func (c *countingFS) Open(ctx context.Context, name string) (mounts.File, error) {
	return c.OpenWith(ctx, name, mounts.OpenOptions{})
}

func (c *countingFS) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	f, err := c.describedFS.Open(ctx, name)
	if err == nil {
		c.opens.Add(1)
		c.open.Add(1)
		if o.PagesKept {
			c.kept.Add(1)
		}
		f = &openCountedFile{File: f, c: c}
	}
	return f, err
}

type openCountedFile struct {
	mounts.File
	c *countingFS
}

func (f *openCountedFile) Close() error {
	f.c.open.Add(-1)
	return f.File.Close()
}

// immutableWorkspace is a union of a writable memory mount at /memory and
// an immutable one at /repo holding repo/big (3 MiB) and repo/d/small.
func immutableWorkspace(t *testing.T) (*union.Union, *countingFS, []byte) {
	t.Helper()
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16)
	require.NoError(t, mounts.WriteFile(ctx, content, "big", big, 0o644))
	require.NoError(t, mounts.Mkdir(ctx, content, "d", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, content, "d/small", []byte("small"), 0o644))
	repo := &countingFS{describedFS: describedFS{content, mounts.Description{Type: "git", Immutable: true}}}
	u, err := union.New(map[string]mounts.FS{"/memory": memfs.New(memfs.Options{}), "/repo": repo})
	require.NoError(t, err)
	return u, repo, big
}

func TestImmutableRootOnItsOwnConnection(t *testing.T) {
	u, repo, big := immutableWorkspace(t)
	srv, dir := mountFS(t, u, Options{StackConnections: true})
	root := filepath.Join(dir, "repo")

	below, err := MountsBelow(dir)
	require.NoError(t, err)
	require.Equal(t, []string{root}, below, "the immutable root is a mount of its own")
	assert.NotEqual(t, statT(t, dir).Dev, statT(t, root).Dev)

	t.Run("content and identity are the union's", func(t *testing.T) {
		a, err := u.Stat(context.Background(), "repo/d/small")
		require.NoError(t, err)
		assert.Equal(t, a.Ino, statT(t, filepath.Join(root, "d", "small")).Ino)
		got, err := os.ReadFile(filepath.Join(root, "big"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(big, got), "3 MiB read back")
		ents, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Len(t, ents, 2)
		assert.Equal(t, "big", ents[0].Name())
	})

	t.Run("opens do not reach the mount, reads share a file", func(t *testing.T) {
		p := filepath.Join(root, "d", "small")
		before := repo.opens.Load()
		for range 20 {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, "small", string(b))
		}
		// The first read may open the file for the reader cache; the
		// other 19 are served from the page cache without an OPEN.
		assert.LessOrEqual(t, repo.opens.Load()-before, int64(1))
	})

	t.Run("read-only through the kernel", func(t *testing.T) {
		err := os.WriteFile(filepath.Join(root, "new"), []byte("x"), 0o644)
		assert.ErrorIs(t, err, syscall.EROFS)
		f, err := os.OpenFile(filepath.Join(root, "big"), os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		assert.ErrorIs(t, err, syscall.EROFS)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "memory", "f"), []byte("w"), 0o644),
			"the rest of the workspace stays writable")
		assert.ErrorIs(t, os.Rename(filepath.Join(dir, "memory", "f"), filepath.Join(root, "f")), syscall.EXDEV)
	})

	t.Run("fsync of an immutable file succeeds", func(t *testing.T) {
		f, err := os.Open(filepath.Join(root, "big"))
		require.NoError(t, err)
		defer f.Close()
		assert.NoError(t, f.Sync())
	})

	t.Run("unmount takes both connections", func(t *testing.T) {
		require.NoError(t, srv.Unmount())
		srv.Wait()
		below, err := MountsBelow(dir)
		require.NoError(t, err)
		assert.Empty(t, below)
		st, err := Probe(dir)
		require.NoError(t, err)
		assert.Equal(t, StateNone, st)
		assert.Zero(t, repo.open.Load(), "every reader closed")
	})
}

// TestImmutableRootUnmountedFromOutside: vfsmount umount of a busy
// workspace unmounts the immutable roots and then fails on the workspace;
// the server's own unmount must still succeed once it is idle.
func TestImmutableRootUnmountedFromOutside(t *testing.T) {
	u, _, _ := immutableWorkspace(t)
	srv, dir := mountFS(t, u, Options{StackConnections: true})
	busy, err := os.Open(filepath.Join(dir, "memory"))
	require.NoError(t, err)
	require.NoError(t, unix.Unmount(filepath.Join(dir, "repo"), 0))
	assert.ErrorIs(t, unix.Unmount(dir, 0), syscall.EBUSY)
	require.NoError(t, busy.Close())
	require.NoError(t, srv.Unmount())
	srv.Wait()
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st)
}

func TestImmutableRootForceUnmount(t *testing.T) {
	u, _, _ := immutableWorkspace(t)
	srv, dir := mountFS(t, u, Options{StackConnections: true})
	f, err := os.Open(filepath.Join(dir, "repo", "big")) // keeps the inner mount busy
	require.NoError(t, err)
	require.NoError(t, ForceUnmount(dir))
	below, err := MountsBelow(dir)
	require.NoError(t, err)
	assert.Empty(t, below, "detached from the namespace")
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st)
	// The detached connections live until their last user lets go.
	b := make([]byte, 4)
	_, err = f.ReadAt(b, 16)
	require.NoError(t, err)
	assert.Equal(t, "0123", string(b))
	require.NoError(t, f.Close())
	srv.Wait()
}

func TestImmutableRootsRefused(t *testing.T) {
	u, _, _ := immutableWorkspace(t)
	var logs syncBuffer
	_, dir := mountSeamed(t, u, Options{StackConnections: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, seams{roots: []string{"memory", "nope", "../x"}})
	below, err := MountsBelow(dir)
	require.NoError(t, err)
	assert.Empty(t, below, "no root qualified")
	assert.Contains(t, logs.String(), "its content is neither immutable, copy-on-write nor notified")
	assert.Contains(t, logs.String(), "not a directory name")
	// Everything is still served by the main connection.
	b, err := os.ReadFile(filepath.Join(dir, "repo", "d", "small"))
	require.NoError(t, err)
	assert.Equal(t, "small", string(b))
}

func TestImmutableRootInsideAnother(t *testing.T) {
	u, _, _ := immutableWorkspace(t)
	var logs syncBuffer
	_, dir := mountSeamed(t, u, Options{StackConnections: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, seams{roots: []string{"repo", "repo/d"}})
	below, err := MountsBelow(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "repo")}, below, "one connection for the outer root")
	assert.Contains(t, logs.String(), "it is below repo, which has a connection of its own")
	b, err := os.ReadFile(filepath.Join(dir, "repo", "d", "small"))
	require.NoError(t, err)
	assert.Equal(t, "small", string(b))
}

func TestWholeTreeImmutable(t *testing.T) {
	fusetest.Need(t)
	_, repo, big := immutableWorkspace(t)
	srv, dir := mountFS(t, repo, Options{StackConnections: true})
	below, err := MountsBelow(dir)
	require.NoError(t, err)
	assert.Empty(t, below, "the main connection is the immutable one")
	_, err = os.Stat(filepath.Join(dir, "big"))
	require.NoError(t, err)
	assert.Equal(t, immutablePolicy, srv.conn.root.cache)
	assert.Equal(t, immutablePolicy, srv.conn.root.GetChild("big").Operations().(*node).cache,
		"every node of an immutable connection is cached as immutable")
	before := repo.opens.Load()
	for range 5 {
		got, err := os.ReadFile(filepath.Join(dir, "big"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(big, got))
	}
	assert.LessOrEqual(t, repo.opens.Load()-before, int64(1))
	assert.ErrorIs(t, os.WriteFile(filepath.Join(dir, "new"), nil, 0o644), syscall.EROFS)
}

func TestReadaheadFillsThePageCache(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, content, "d", 0o755))
	want := map[string][]byte{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		want[name] = bytes.Repeat([]byte(name), 5000+len(want)*1000)
		require.NoError(t, mounts.WriteFile(ctx, content, "d/"+name, want[name], 0o644))
	}
	require.NoError(t, mounts.WriteFile(ctx, content, "d/huge", make([]byte, readpattern.Default.FileMax+1), 0o644))
	repo := newAheadFS(content)
	srv, dir := mountFS(t, repo, Options{StackConnections: true})
	ents, err := os.ReadDir(filepath.Join(dir, "d")) // READDIRPLUS: the kernel knows every node
	require.NoError(t, err)
	require.Len(t, ents, 7)

	read := func(name string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, "d", name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want[name], got), "content of %s", name)
	}
	served := func(name string) bool {
		t.Helper()
		ch := srv.conn.root.GetChild("d").GetChild(name)
		require.NotNil(t, ch, name)
		return ch.Operations().(*node).served.Load()
	}

	read("a")
	read("b") // a second file of d: c, d, e and f are offered and stored
	assert.True(t, served("a") && served("b"))
	require.Eventually(t, func() bool { return srv.conn.pages.Load().stored.Load() == 4 },
		10*time.Second, 5*time.Millisecond, "the page store stores what the mount read ahead")
	for _, name := range []string{"c", "d", "e", "f"} {
		read(name)
		assert.False(t, served(name), "%s came from the page cache, without a READ", name)
	}
	assert.Equal(t, int64(6), repo.opens.Load(), "the file over the size bound was left alone")
	assert.Equal(t, int64(4), repo.offered.Load(), "offered once each")
}

func TestReadaheadStoresANodeOnce(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, content, "a", []byte("alpha"), 0o644))
	repo := &countingFS{describedFS: describedFS{content, mounts.Description{Type: "git", Immutable: true}}}
	srv, dir := mountFS(t, repo, Options{StackConnections: true})
	_, err := os.Stat(filepath.Join(dir, "a")) // the kernel knows the node
	require.NoError(t, err)
	ch := srv.conn.root.GetChild("a")
	require.NotNil(t, ch)

	// Offered twice (by a scan and by the listing that showed it), a
	// file is handed to the kernel once; the content comes with the
	// offer, so the store opens nothing.
	srv.conn.pages.Load().offer("a", []byte("alpha"))
	srv.conn.pages.Load().offer("a", []byte("alpha"))
	assert.Equal(t, int64(1), srv.conn.pages.Load().stored.Load())
	assert.Equal(t, int64(0), repo.opens.Load())
	srv.conn.pages.Load().offer("a", []byte("not alpha")) // not the size the kernel knows
	srv.conn.pages.Load().offer("nope", []byte("x"))      // no such node
	assert.Equal(t, int64(1), srv.conn.pages.Load().stored.Load())
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, "alpha", string(b))
	assert.False(t, ch.Operations().(*node).served.Load(), "read from the page cache")
}

func TestImmutableListingsWithoutOpendir(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, content, "big", 0o755))
	var want []string
	for i := range 3000 { // several READDIRPLUS replies, read at offsets
		name := fmt.Sprintf("entry-with-a-rather-long-name-%04d", i)
		want = append(want, name)
		require.NoError(t, mounts.WriteFile(ctx, content, "big/"+name, []byte(name), 0o644))
	}
	repo := &countingFS{describedFS: describedFS{content, mounts.Description{Type: "git", Immutable: true}}}
	u, err := union.New(map[string]mounts.FS{"/memory": memfs.New(memfs.Options{}), "/repo": repo})
	require.NoError(t, err)
	_, dir := mountFS(t, u, Options{StackConnections: true})
	big := filepath.Join(dir, "repo", "big")
	for pass := range 2 {
		f, err := os.Open(big)
		require.NoError(t, err)
		names, err := f.Readdirnames(-1)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.Equal(t, want, names, "pass %d", pass)
	}
	b, err := os.ReadFile(filepath.Join(big, want[2999]))
	require.NoError(t, err)
	assert.Equal(t, want[2999], string(b))
	// fsync of a directory opened without a handle.
	d, err := os.Open(big)
	require.NoError(t, err)
	assert.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

func TestReadaheadDuringAScanListsAhead(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	want := map[string][]byte{}
	for _, d := range []string{"a", "b"} {
		require.NoError(t, mounts.Mkdir(ctx, content, d, 0o755))
		for _, f := range []string{"1", "2", "3"} {
			name := d + "/" + f
			want[name] = bytes.Repeat([]byte(name), 1000)
			require.NoError(t, mounts.WriteFile(ctx, content, name, want[name], 0o644))
		}
	}
	repo := newAheadFS(content)
	srv, dir := mountFS(t, repo, Options{StackConnections: true})
	read := func(name string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want[name], got), name)
	}
	served := func(name string) bool {
		t.Helper()
		d, f, _ := strings.Cut(name, "/")
		ch := srv.conn.root.GetChild(d).GetChild(f)
		require.NotNil(t, ch, name)
		return ch.Operations().(*node).served.Load()
	}

	// Listing and a stat of every file is not a scan: nothing is read.
	ents, err := os.ReadDir(filepath.Join(dir, "a"))
	require.NoError(t, err)
	for _, e := range ents {
		statT(t, filepath.Join(dir, "a", e.Name()))
	}
	assert.Never(t, func() bool { return repo.opens.Load() > 0 }, 100*time.Millisecond, 5*time.Millisecond,
		"listing alone decodes nothing")
	read("a/1")
	read("a/2") // a scan: a/3 is stored, and directories listed next are too
	require.Eventually(t, func() bool { return srv.conn.pages.Load().stored.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	_, err = os.ReadDir(filepath.Join(dir, "b"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.conn.pages.Load().stored.Load() == 4 }, 10*time.Second, 5*time.Millisecond,
		"b's three files stored as b is listed")
	for _, name := range []string{"a/3", "b/1", "b/2", "b/3"} {
		read(name)
		assert.False(t, served(name), "%s came from the page cache", name)
	}
}

// aheadFS is an immutable memory mount that reads ahead as a git mount
// does, on the one detector (package readpattern): when a scan starts in a
// directory it offers the small files after the one that started it, and
// during a scan the small files of each directory listed. It reads them
// through countingFS.OpenWith, so that opens count what it decoded, and offers
// from a goroutine of its own, as a mount's workers do, never from inside
// the request.
type aheadFS struct {
	*countingFS
	det     *readpattern.Detector
	sink    atomic.Pointer[mounts.PageSink]
	offered atomic.Int64
}

func newAheadFS(content *memfs.FS) *aheadFS {
	return &aheadFS{
		countingFS: &countingFS{describedFS: describedFS{content, mounts.Description{Type: "git", Immutable: true}}},
		det:        readpattern.New(readpattern.Default, nil),
	}
}

func (a *aheadFS) OfferPages(sink mounts.PageSink) bool {
	if sink == nil {
		a.sink.Store(nil)
	} else {
		a.sink.Store(&sink)
	}
	return true
}

func (a *aheadFS) Open(ctx context.Context, name string) (mounts.File, error) {
	return a.OpenWith(ctx, name, mounts.OpenOptions{})
}

func (a *aheadFS) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	f, err := a.countingFS.OpenWith(ctx, name, o)
	if err == nil && a.det.Opened(name).Started {
		a.ahead(path.Dir(name), path.Base(name))
	}
	return f, err
}

func (a *aheadFS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, err := a.countingFS.ReadDir(ctx, name)
	if err == nil && a.det.Scan() != 0 {
		a.ahead(name, "")
	}
	return ents, err
}

// ahead offers the small files of dir after the name after.
func (a *aheadFS) ahead(dir, after string) {
	go func() {
		ctx := context.Background()
		ents, err := a.countingFS.ReadDir(ctx, dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			name := mounts.Join(dir, e.Name)
			if e.Name <= after || e.Type != 0 {
				continue
			}
			if at, err := a.Stat(ctx, name); err != nil || at.Size > readpattern.Default.FileMax {
				continue
			}
			data, err := mounts.ReadFile(ctx, a.countingFS, name)
			if sink := a.sink.Load(); err == nil && sink != nil {
				(*sink)(name, data)
				a.offered.Add(1)
			}
		}
	}()
}

// statDirFS lists with attributes and counts the Stats it is asked for.
type statDirFS struct {
	describedFS
	stats, statDirs atomic.Int64
}

func (s *statDirFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	s.stats.Add(1)
	return s.describedFS.Stat(ctx, name)
}

func (s *statDirFS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	s.statDirs.Add(1)
	return mounts.StatEach(ctx, s.describedFS, name) // uncounted Stats
}

func TestReaddirplusUsesStatDir(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, content, "d", 0o755))
	for i := range 20 {
		require.NoError(t, mounts.WriteFile(ctx, content, fmt.Sprintf("d/f%02d", i), bytes.Repeat([]byte("x"), i), 0o644))
	}
	fsys := &statDirFS{describedFS: describedFS{content, mounts.Description{Type: "git", Immutable: true}}}
	_, dir := mountFS(t, fsys, Options{StackConnections: true})
	_, err := os.Stat(filepath.Join(dir, "d"))
	require.NoError(t, err)
	before := fsys.stats.Load()
	ents, err := os.ReadDir(filepath.Join(dir, "d"))
	require.NoError(t, err)
	require.Len(t, ents, 20)
	for i, e := range ents {
		st := statT(t, filepath.Join(dir, "d", e.Name()))
		assert.Equal(t, int64(i), st.Size, e.Name())
	}
	assert.Equal(t, int64(1), fsys.statDirs.Load())
	assert.Zero(t, fsys.stats.Load()-before, "no Stat per entry: READDIRPLUS answered from StatDir")
}

// brokenEntryFS is a StatDirFS one of whose entries cannot be stat'ed, as
// a git mount's is when its blob is missing.
type brokenEntryFS struct {
	describedFS
	broken string
}

func (b *brokenEntryFS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if name == b.broken {
		return mounts.Attr{}, mounts.PathErr("stat", name, syscall.EIO)
	}
	return b.describedFS.Stat(ctx, name)
}

func (b *brokenEntryFS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	return mounts.StatEach(ctx, b, name) // fails as a whole on the broken entry
}

func TestABrokenEntryFailsAlone(t *testing.T) {
	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, content, "d", 0o755))
	for _, name := range []string{"a", "bad", "c"} {
		require.NoError(t, mounts.WriteFile(ctx, content, "d/"+name, []byte(name), 0o644))
	}
	fsys := &brokenEntryFS{describedFS{content, mounts.Description{Type: "git", Immutable: true}}, "d/bad"}
	_, dir := mountFS(t, fsys, Options{StackConnections: true})

	ents, err := os.ReadDir(filepath.Join(dir, "d"))
	require.NoError(t, err, "the directory lists")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"a", "bad", "c"}, names)
	_, err = os.Stat(filepath.Join(dir, "d", "bad"))
	assert.ErrorIs(t, err, syscall.EIO, "the broken entry fails alone")
	for _, name := range []string{"a", "c"} {
		b, err := os.ReadFile(filepath.Join(dir, "d", name))
		require.NoError(t, err)
		assert.Equal(t, name, string(b))
	}
}

// TestImmutableRoots moved here from the CLI, which computed the roots
// itself before they came from the mount table.
func TestImmutableRoots(t *testing.T) {
	git := func() mounts.FS {
		return describedFS{memfs.New(memfs.Options{}), mounts.Description{Type: "git", Immutable: true}}
	}
	mem := func() mounts.FS { return memfs.New(memfs.Options{}) }
	for _, tc := range []struct {
		name  string
		table map[string]mounts.FS
		want  []string
	}{
		{"default workspace", map[string]mounts.FS{"/repo": git(), "/memory": mem()}, []string{"repo"}},
		{"two repositories, one nested deeper",
			map[string]mounts.FS{"/repo": git(), "/src/lib": git(), "/memory": mem()}, []string{"repo", "src/lib"}},
		{"a mount below a repository keeps it on the main connection",
			map[string]mounts.FS{"/repo": git(), "/repo/node_modules": mem()}, nil},
		{"everything immutable", map[string]mounts.FS{"/a": git(), "/b": git()}, []string{"."}},
		{"nothing immutable", map[string]mounts.FS{"/memory": mem()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := union.New(tc.table)
			require.NoError(t, err)
			got := ImmutableRoots(u)
			slices.Sort(got)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("a single mount", func(t *testing.T) {
		assert.Equal(t, []string{"."}, ImmutableRoots(git()))
		assert.Nil(t, ImmutableRoots(mem()))
	})
}

// The kernel face tells the mount when the kernel keeps the pages it
// reads past the open (mounts.OpenOptions.PagesKept): every open of an immutable
// connection's reader cache, and a read-only open with FOPEN_KEEP_CACHE;
// not an open for writing.
func TestOpensSayWhenTheKernelKeepsThePages(t *testing.T) {
	fusetest.Need(t)
	_, repo, big := immutableWorkspace(t)
	_, dir := mountFS(t, repo, Options{StackConnections: true})
	got, err := os.ReadFile(filepath.Join(dir, "big"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got))
	require.Positive(t, repo.opens.Load())
	assert.Equal(t, repo.opens.Load(), repo.kept.Load(), "immutable connection: every open")

	ctx := context.Background()
	content := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, content, "f", []byte("data"), 0o644))
	mem := &openCountingFS{countingFS{describedFS: describedFS{content, mounts.Description{Type: "memory"}}}}
	_, mdir := mountFS(t, mem, Options{})
	b, err := os.ReadFile(filepath.Join(mdir, "f"))
	require.NoError(t, err)
	require.Equal(t, "data", string(b))
	require.Equal(t, int64(1), mem.opens.Load())
	assert.Equal(t, int64(1), mem.kept.Load(), "read-only, keep-cache")
	w, err := os.OpenFile(filepath.Join(mdir, "f"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, int64(2), mem.opens.Load())
	assert.Equal(t, int64(1), mem.kept.Load(), "open for writing: not kept")
}

// openCountingFS is a countingFS that opens with flags, as the main
// connection's OPEN does through mounts.OpenFile. An open with flags takes
// no options, so none of them counts as kept.
type openCountingFS struct{ countingFS }

func (c *openCountingFS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	f, err := c.countingFS.describedFS.OpenFile(ctx, name, flag, perm)
	if err == nil {
		c.opens.Add(1)
	}
	return f, err
}
