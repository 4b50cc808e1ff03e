package overlayfs_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// TestMergedDirectoryNlink: a merged directory's link count is 2 plus the
// directories its listing shows, through every kind of change to it: new
// directories, a lower one removed (a whiteout), replaced by a file,
// renamed in and out, a file where none was.
func TestMergedDirectoryNlink(t *testing.T) {
	t.Run("few lower directories", func(t *testing.T) { mergedNlink(t, ruleLower(t)) })
	t.Run("many lower directories", func(t *testing.T) {
		// Past the few a stat checks one by one.
		lower, _ := memLower(t, "d0/", "d1/", "d2/", "d3/", "d4/", "d5/", "d6/", "d7/", "d8/", "d9/",
			"README.md", "a.txt", "dir1/f.txt", "dir1/sub/g.txt", "full/one.txt", "deep/a/b/c/d.go")
		mergedNlink(t, lower)
	})
	t.Run("past the lookups", func(t *testing.T) {
		// More lower directories than a stat looks up one by one: the
		// upper is listed.
		specs := []string{"README.md", "a.txt", "dir1/f.txt", "dir1/sub/g.txt", "full/one.txt", "deep/a/b/c/d.go"}
		for i := range 70 {
			specs = append(specs, fmt.Sprintf("d%02d/", i))
		}
		lower, _ := memLower(t, specs...)
		mergedNlink(t, lower)
	})
}

func mergedNlink(t *testing.T, lower mounts.FS) {
	o, _ := newOverlay(t, lower)
	check := func(dir, what string) {
		t.Helper()
		ents, err := o.ReadDir(bg, dir)
		require.NoError(t, err)
		want := uint32(2)
		for _, e := range ents {
			if e.Type.IsDir() {
				want++
			}
		}
		assert.Equal(t, want, stat(t, o, dir).Nlink, "%s: %s", dir, what)
	}
	// The root is merged once the upper has it; make it so.
	require.NoError(t, mounts.WriteFile(bg, o, "new.txt", []byte("n"), 0o644))
	check(".", "a file added")
	require.NoError(t, mounts.Mkdir(bg, o, "newdir", 0o755))
	check(".", "a directory added")
	require.NoError(t, mounts.RemoveAll(bg, o, "full"))
	check(".", "a lower directory removed")
	require.NoError(t, mounts.Mkdir(bg, o, "full", 0o755))
	check(".", "a directory where the lower one was")
	require.NoError(t, mounts.RemoveAll(bg, o, "deep"))
	require.NoError(t, mounts.WriteFile(bg, o, "deep", []byte("now a file"), 0o644))
	check(".", "a lower directory replaced by a file")
	require.NoError(t, mounts.Rename(bg, o, "dir1", "moved", 0))
	check(".", "a lower directory renamed")
	require.NoError(t, mounts.Rename(bg, o, "moved/sub", "sub2", 0))
	check(".", "a directory moved up")
	check("moved", "a directory moved out")
	require.NoError(t, mounts.Mkdir(bg, o, "moved/sub3", 0o755))
	check("moved", "a directory added in a renamed one")
}
