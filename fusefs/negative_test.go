package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// missing stats p through the kernel and requires it to be missing.
func missing(t *testing.T, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	require.ErrorIs(t, err, syscall.ENOENT, p)
}

// TestNegativeEntries: a miss on a mount only this process changes is
// asked once, and a name the tool face then creates (through the observed
// tree, which calls Invalidate) is seen by the next stat, at any depth;
// a name the kernel creates over a cached miss is there at once too.
func TestNegativeEntries(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, m, "d", 0o755))
	require.NoError(t, mounts.Mkdir(ctx, m, "d/e", 0o755))
	u, err := union.New(map[string]mounts.FS{"/memory": m})
	require.NoError(t, err)
	counts := &RequestCounts{}
	srv, dir := mountFS(t, u, Options{Counts: counts})
	tools := mounts.Observe(u, srv.Invalidate)

	lookups := func() uint64 { return counts.Snapshot()[OpLookup] }
	for _, name := range []string{"memory/top", "memory/d/x", "memory/d/e/y"} {
		p := filepath.Join(dir, name)
		missing(t, p)
		before := lookups()
		missing(t, p)
		assert.Equal(t, before, lookups(), "the second miss of %s is the kernel's", name)
	}

	// The tool face creates each name: the kernel sees it at once.
	require.NoError(t, mounts.WriteFile(ctx, tools, "memory/top", []byte("t"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, tools, "memory/d/x", []byte("x"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, tools, "memory/d/e/y", 0o755))
	for _, name := range []string{"memory/top", "memory/d/x", "memory/d/e/y"} {
		_, err := os.Lstat(filepath.Join(dir, name))
		assert.NoError(t, err, "%s, created by the tool face", name)
	}

	// A rename by the tool face into a cached miss, and of a whole
	// directory under which misses are cached.
	missing(t, filepath.Join(dir, "memory", "d", "renamed"))
	missing(t, filepath.Join(dir, "memory", "d", "e", "z"))
	require.NoError(t, mounts.WriteFile(ctx, m, "d/e/z", []byte("z"), 0o644)) // behind the kernel's back
	require.NoError(t, mounts.Rename(ctx, tools, "memory/d/x", "memory/d/renamed", 0))
	b, err := os.ReadFile(filepath.Join(dir, "memory", "d", "renamed"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
	missing(t, filepath.Join(dir, "memory", "d", "x"))
	missing(t, filepath.Join(dir, "memory", "d", "e", "z")) // still cached: nobody said
	srv.Invalidate("memory/d")
	_, err = os.Lstat(filepath.Join(dir, "memory", "d", "e", "z"))
	assert.NoError(t, err, "invalidating a directory drops the misses below it")

	// The kernel's own creation over a cached miss.
	p := filepath.Join(dir, "memory", "d", "k")
	missing(t, p)
	require.NoError(t, os.WriteFile(p, []byte("k"), 0o644))
	a, err := u.Stat(ctx, "memory/d/k")
	require.NoError(t, err)
	assert.Equal(t, int64(1), a.Size)
	_, err = os.Lstat(p)
	assert.NoError(t, err)
}

// TestNegativeEntriesAtStackedRoot: misses at the root of a copy-on-write
// connection are cached, and invalidating the whole mount (a restore)
// drops them, though the root has no entry above it to drop.
func TestNegativeEntriesAtStackedRoot(t *testing.T) {
	ctx := context.Background()
	srv, dir, ov := cowWorkspace(t, map[string]string{"a": "alpha"})
	repo := filepath.Join(dir, "repo")
	missing(t, filepath.Join(repo, "new"))
	missing(t, filepath.Join(repo, "dir"))
	require.NoError(t, mounts.WriteFile(ctx, ov, "new", []byte("n"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, ov, "dir", 0o755))
	missing(t, filepath.Join(repo, "new")) // the kernel's cache: nobody said
	srv.Invalidate("repo")
	b, err := os.ReadFile(filepath.Join(repo, "new"))
	require.NoError(t, err)
	assert.Equal(t, "n", string(b))
	st, err := os.Lstat(filepath.Join(repo, "dir"))
	require.NoError(t, err)
	assert.True(t, st.IsDir())

	// And by name, as the tool face tells of its changes.
	missing(t, filepath.Join(repo, "later"))
	require.NoError(t, mounts.WriteFile(ctx, ov, "later", []byte("l"), 0o644))
	srv.Invalidate("repo/later")
	_, err = os.Lstat(filepath.Join(repo, "later"))
	assert.NoError(t, err)
}

// TestRootNegativesBounded: the misses remembered at a root are bounded.
func TestRootNegativesBounded(t *testing.T) {
	var r rootNegatives
	for i := range maxRootNegatives {
		require.True(t, r.add(string(rune('a'+i%26))+string(rune(i))))
	}
	assert.False(t, r.add("one more"), "past the bound a miss is not cached")
	assert.True(t, r.add(string(rune('a'))+string(rune(0))), "a name already there still is")
	assert.Len(t, r.take(), maxRootNegatives)
	assert.True(t, r.add("one more"), "taken, the room is back")
}
