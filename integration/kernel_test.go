package integration

import (
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

func readDirNames(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(path)
	require.NoError(t, err, "readdir %s", path)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "read %s", path)
	return string(b)
}

func TestSyntheticDirectoriesAreReadOnly(t *testing.T) {
	w := newWorkspace(t)
	assert.Equal(t, []string{"agent", "memory"}, readDirNames(t, w.dir))
	fi, err := os.Stat(w.dir)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	tests := []struct {
		name string
		do   func() error
	}{
		{"create", func() error { return os.WriteFile(w.path("f"), []byte("x"), 0o644) }},
		{"mkdir", func() error { return os.Mkdir(w.path("d"), 0o755) }},
		{"symlink", func() error { return os.Symlink("memory", w.path("l")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.do(), syscall.EROFS)
		})
	}
	assert.Equal(t, []string{"agent", "memory"}, readDirNames(t, w.dir), "nothing was created")
}

func TestRenameAcrossMounts(t *testing.T) {
	w := newWorkspace(t)
	require.NoError(t, os.WriteFile(w.path("memory/src"), []byte("payload"), 0o640))
	require.NoError(t, os.MkdirAll(w.path("memory/tree/sub"), 0o755))
	require.NoError(t, os.WriteFile(w.path("memory/tree/sub/leaf"), []byte("leaf"), 0o644))

	t.Run("rename(2) is EXDEV", func(t *testing.T) {
		for _, dst := range []string{"agent/dst", "agent/notes/dst"} {
			assert.ErrorIs(t, syscall.Rename(w.path("memory/src"), w.path(dst)), syscall.EXDEV, "to %s", dst)
		}
		assert.ErrorIs(t, syscall.Rename(w.path("agent/notes"), w.path("memory/notes")), syscall.EBUSY,
			"a mount point does not move")
		assert.ErrorIs(t, os.Link(w.path("memory/src"), w.path("agent/hard")), syscall.EXDEV)
		assert.Equal(t, "payload", readFile(t, w.path("memory/src")), "the source is untouched")
	})

	t.Run("mv copies", func(t *testing.T) {
		out, err := exec.Command("mv", w.path("memory/src"), w.path("agent/notes/moved")).CombinedOutput()
		require.NoError(t, err, "mv: %s", out)
		assert.Equal(t, "payload", readFile(t, w.path("agent/notes/moved")))
		fi, err := os.Stat(w.path("agent/notes/moved"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "mv keeps the mode")
		_, err = os.Stat(w.path("memory/src"))
		assert.ErrorIs(t, err, syscall.ENOENT)

		out, err = exec.Command("mv", w.path("memory/tree"), w.path("agent/tree")).CombinedOutput()
		require.NoError(t, err, "mv of a directory: %s", out)
		assert.Equal(t, "leaf", readFile(t, w.path("agent/tree/sub/leaf")))
		_, err = os.Stat(w.path("memory/tree"))
		assert.ErrorIs(t, err, syscall.ENOENT)
	})
}

func TestMountPointsAreBusy(t *testing.T) {
	w := newWorkspace(t)
	for _, name := range []string{"memory", "agent", "agent/notes"} {
		assert.ErrorIs(t, syscall.Rmdir(w.path(name)), syscall.EBUSY, "rmdir %s", name)
	}
	assert.ErrorIs(t, syscall.Rename(w.path("memory"), w.path("memory2")), syscall.EBUSY)
	assert.Equal(t, []string{"agent", "memory"}, readDirNames(t, w.dir))
	assert.Equal(t, []string{"notes"}, readDirNames(t, w.path("agent")))
}

func TestInodeNumbersDoNotCollide(t *testing.T) {
	w := newWorkspace(t)
	// Each memory mount numbers its entries from the same start, so the
	// first file of each has the same number inside its mount.
	names := []string{"memory", "agent", "agent/notes", "memory/f", "agent/f", "agent/notes/f"}
	for _, name := range names[3:] {
		require.NoError(t, os.WriteFile(w.path(name), []byte(name), 0o644))
	}
	seen := map[uint64]string{}
	seen[statIno(t, w.dir)] = "/"
	for _, name := range names {
		ino := statIno(t, w.path(name))
		if prev, dup := seen[ino]; dup {
			t.Errorf("inode %#x of %s collides with %s", ino, name, prev)
		}
		seen[ino] = name
		assert.Equal(t, ino, statIno(t, w.path(name)), "stable across stats: %s", name)
		a, err := w.union.Stat(bg, name)
		require.NoError(t, err)
		assert.Equal(t, a.Ino, ino, "the kernel shows the union's number for %s", name)
	}
}

func statIno(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	return st.Ino
}

func TestListingsAreStable(t *testing.T) {
	w := newWorkspace(t)
	for _, name := range []string{"zeta", "Alpha", "beta", "_x", "10", "9", "émoji ✓"} {
		require.NoError(t, os.WriteFile(w.path("memory/"+name), nil, 0o644))
	}
	require.NoError(t, os.WriteFile(w.path("agent/a"), nil, 0o644))
	require.NoError(t, os.WriteFile(w.path("agent/z"), nil, 0o644))

	want := []string{"10", "9", "Alpha", "_x", "beta", "zeta", "émoji ✓"}
	assert.Equal(t, want, readDirNames(t, w.path("memory")), "sorted by byte order")
	assert.Equal(t, []string{"a", "notes", "z"}, readDirNames(t, w.path("agent")),
		"the nested mount point is listed among its parent's entries")

	// Concurrent readers all see the same listing.
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for i := range got {
		wg.Go(func() {
			for range 20 {
				ents, err := os.ReadDir(w.path("memory"))
				if err != nil {
					got[i] = []string{err.Error()}
					return
				}
				names := make([]string, len(ents))
				for j, e := range ents {
					names[j] = e.Name()
				}
				if !slices.Equal(names, want) {
					got[i] = names
					return
				}
			}
			got[i] = want
		})
	}
	wg.Wait()
	for i, g := range got {
		assert.Equal(t, want, g, "reader %d", i)
	}
}

func TestLibraryWritesAreSeenAtOnce(t *testing.T) {
	w := newWorkspace(t)
	p := w.path("memory/x")
	require.NoError(t, os.WriteFile(p, []byte("kernel"), 0o644))
	require.Equal(t, "kernel", readFile(t, p))

	t.Run("content and size", func(t *testing.T) {
		// Each round changes the size and the content within the
		// kernel's attribute timeout: only invalidation can show it.
		for i, content := range []string{"library API", "v2", "a longer third version", ""} {
			require.NoError(t, mounts.WriteFile(bg, w.lib, "memory/x", []byte(content), 0o644))
			assert.Equal(t, content, readFile(t, p), "round %d", i)
			fi, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, int64(len(content)), fi.Size(), "round %d", i)
		}
	})
	t.Run("new names", func(t *testing.T) {
		_, err := os.Stat(w.path("agent/notes/new.md"))
		require.ErrorIs(t, err, syscall.ENOENT)
		require.NoError(t, mounts.WriteFile(bg, w.lib, "agent/notes/new.md", []byte("# new"), 0o644))
		assert.Equal(t, "# new", readFile(t, w.path("agent/notes/new.md")))
		assert.Equal(t, []string{"new.md"}, readDirNames(t, w.path("agent/notes")))
		require.NoError(t, mounts.Mkdir(bg, w.lib, "memory/dir", 0o755))
		fi, err := os.Stat(w.path("memory/dir"))
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
	})
	t.Run("rename and remove", func(t *testing.T) {
		require.NoError(t, mounts.Rename(bg, w.lib, "agent/notes/new.md", "agent/notes/renamed.md", 0))
		assert.Equal(t, "# new", readFile(t, w.path("agent/notes/renamed.md")))
		_, err := os.Stat(w.path("agent/notes/new.md"))
		assert.ErrorIs(t, err, syscall.ENOENT)
		require.NoError(t, mounts.Unlink(bg, w.lib, "memory/x"))
		_, err = os.Stat(p)
		assert.ErrorIs(t, err, syscall.ENOENT)
	})
	t.Run("attributes", func(t *testing.T) {
		require.NoError(t, mounts.Chmod(bg, w.lib, "agent/notes/renamed.md", 0o600))
		fi, err := os.Stat(w.path("agent/notes/renamed.md"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
	t.Run("and the reverse", func(t *testing.T) {
		require.NoError(t, os.WriteFile(w.path("memory/y"), []byte("from the shell"), 0o644))
		b, err := mounts.ReadFile(bg, w.lib, "memory/y")
		require.NoError(t, err)
		assert.Equal(t, "from the shell", string(b))
	})
}
