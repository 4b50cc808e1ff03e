package fusefs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/union"
)

// syncingFS is a memory mount that counts the Syncs of its files.
type syncingFS struct {
	*memfs.FS
	syncs atomic.Int64
}

func (s *syncingFS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	f, err := s.FS.OpenFile(ctx, name, flag, perm)
	if wf, ok := f.(mounts.WritableFile); ok && err == nil {
		return syncingFile{wf, &s.syncs}, nil
	}
	return f, err
}

type syncingFile struct {
	mounts.WritableFile
	syncs *atomic.Int64
}

func (f syncingFile) Sync() error { f.syncs.Add(1); return f.WritableFile.Sync() }

// cowWorkspace is an overlay of a memory upper over an immutable memory
// tree on /repo, next to a memory mount on /memory, mounted with
// Options.StackConnections: /repo gets a copy-on-write connection of its own.
func cowWorkspace(t *testing.T, files map[string]string) (*Server, string, *overlayfs.FS) {
	srv, dir, ov, _ := cowWorkspaceUpper(t, files)
	return srv, dir, ov
}

// cowWorkspaceUpper is cowWorkspace, with its upper.
func cowWorkspaceUpper(t *testing.T, files map[string]string) (*Server, string, *overlayfs.FS, *syncingFS) {
	t.Helper()
	return cowWorkspaceWith(t, files, Options{StackConnections: true})
}

// cowWorkspaceOpts is cowWorkspace mounted with opts (which must stack
// connections).
func cowWorkspaceOpts(t *testing.T, files map[string]string, opts Options) (*Server, string, *overlayfs.FS) {
	t.Helper()
	srv, dir, ov, _ := cowWorkspaceWith(t, files, opts)
	return srv, dir, ov
}

// cowWorkspaceWith is cowWorkspaceUpper mounted with opts.
func cowWorkspaceWith(t *testing.T, files map[string]string, opts Options) (*Server, string, *overlayfs.FS, *syncingFS) {
	t.Helper()
	ctx := context.Background()
	lower := memfs.New(memfs.Options{})
	for name, content := range files {
		require.NoError(t, mounts.WriteFile(ctx, lower, name, []byte(content), 0o644))
	}
	upper := &syncingFS{FS: memfs.New(memfs.Options{})}
	ov, err := overlayfs.New(ctx, describedFS{lower, mounts.Description{Type: "git", Immutable: true}},
		upper, overlayfs.Options{})
	require.NoError(t, err)
	require.True(t, ov.Describe().CopyOnWrite)
	u, err := union.New(map[string]mounts.FS{"/repo": ov, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	assert.Equal(t, []string{"repo"}, CopyOnWriteRoots(u))
	srv, dir := mountFS(t, u, opts)
	require.Len(t, srv.subs, 1, "/repo on a connection of its own")
	c := srv.subs[0].conn
	require.Equal(t, kindCopyOnWrite, c.kind)
	require.True(t, c.how.openless && !c.how.keepListings && !c.how.readOnly)
	return srv, dir, ov, upper
}

// TestCopyOnWriteFsync: an fsync without a handle reaches the mount for a
// file changed through the connection in any way (written without a handle,
// created and written through CREATE's handle, truncated), and opens
// nothing for writing (which would copy it up) for one never changed.
func TestCopyOnWriteFsync(t *testing.T) {
	_, dir, ov, upper := cowWorkspaceUpper(t, map[string]string{"lower": "l", "truncated": "tttt", "untouched": "u"})
	repo := filepath.Join(dir, "repo")
	fsync := func(name string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(repo, name), os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "created"), []byte("c"), 0o644))
	require.NoError(t, os.Truncate(filepath.Join(repo, "truncated"), 1))
	f, err := os.OpenFile(filepath.Join(repo, "lower"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("+"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	for _, name := range []string{"created", "truncated", "lower"} {
		before := upper.syncs.Load()
		fsync(name)
		assert.Greater(t, upper.syncs.Load(), before, "fsync of %s reaches the upper", name)
	}
	before := upper.syncs.Load()
	fsync("untouched")
	assert.Equal(t, before, upper.syncs.Load())
	changes, err := ov.Changes(context.Background())
	require.NoError(t, err)
	for _, c := range changes {
		assert.NotEqual(t, "untouched", c.Path, "an fsync copies nothing up")
	}
}

// TestCopyOnWriteConnection: the kernel opens files without asking (OPEN
// answers ENOSYS), reads and writes reach the overlay without handles, and
// the page store stores offered pages of untouched files only.
func TestCopyOnWriteConnection(t *testing.T) {
	srv, dir, _ := cowWorkspace(t, map[string]string{"a": "alpha", "b": "bravo", "c": "charlie"})
	c := srv.subs[0].conn
	node := func(name string) *node {
		t.Helper()
		ch := c.root.GetChild(name)
		require.NotNil(t, ch, name)
		return ch.Operations().(*node)
	}
	repo := filepath.Join(dir, "repo")
	for _, name := range []string{"a", "b", "c"} {
		statT(t, filepath.Join(repo, name)) // the kernel knows the nodes
	}
	pages := srv.conn.pages.Load()
	require.NotNil(t, pages, "the copy-on-write connection has the page store")

	// Untouched: stored, and then read from the page cache.
	pages.offer("repo/a", []byte("alpha"))
	assert.Equal(t, int64(1), pages.stored.Load())
	b, err := os.ReadFile(filepath.Join(repo, "a"))
	require.NoError(t, err)
	assert.Equal(t, "alpha", string(b))
	assert.False(t, node("a").served.Load(), "read from the page cache")

	// Written through the kernel: the commit's pages are not the file's.
	// (In place, so the size the kernel knows stays the offer's.)
	fb, err := os.OpenFile(filepath.Join(repo, "b"), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fb.WriteAt([]byte("BRAVO"), 0)
	require.NoError(t, err)
	require.NoError(t, fb.Close())
	assert.True(t, node("b").changed.Load())
	require.Equal(t, int64(5), node("b").lastSize())
	pages.offer("repo/b", []byte("bravo"))
	assert.Equal(t, int64(1), pages.stored.Load(), "a written file is left alone")
	b, err = os.ReadFile(filepath.Join(repo, "b"))
	require.NoError(t, err)
	assert.Equal(t, "BRAVO", string(b))

	// A write without a handle (the kernel opened the file itself) and
	// a read-back through the same cached file.
	f, err := os.OpenFile(filepath.Join(repo, "c"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("C"), 0)
	require.NoError(t, err)
	buf := make([]byte, 7)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "Charlie", string(buf))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	assert.True(t, node("c").wrote.Load())

	// A new file gets a handle (CREATE), as anywhere.
	require.NoError(t, os.WriteFile(filepath.Join(repo, "new"), []byte("n"), 0o644))
	b, err = os.ReadFile(filepath.Join(repo, "new"))
	require.NoError(t, err)
	assert.Equal(t, "n", string(b))
	// And the connection is writable, unlike an immutable one.
	require.NoError(t, os.Mkdir(filepath.Join(repo, "dir"), 0o755))
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(repo, &st))
	assert.Zero(t, st.Flags&unix.ST_RDONLY, "mounted read-write")
}
