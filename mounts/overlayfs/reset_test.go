package overlayfs_test

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

func TestReset(t *testing.T) {
	lower, _ := memLower(t, "a=A", "d/b=B", "d/c=C", "e/f=F", "m/n=N")
	o, upper := newOverlay(t, lower)
	want := tree(t, o, true)

	require.NoError(t, mounts.WriteFile(bg, o, "a", []byte("changed"), 0o644))
	require.NoError(t, mounts.WriteFile(bg, o, "d/new", []byte("new"), 0o644))
	require.NoError(t, mounts.Unlink(bg, o, "d/b"))
	require.NoError(t, mounts.Rename(bg, o, "e", "moved", 0))
	require.NoError(t, mounts.RemoveAll(bg, o, "m"))
	require.NoError(t, mounts.Mkdir(bg, o, "m", 0o755)) // opaque now
	require.NoError(t, mounts.WriteFile(bg, o, "m/x", []byte("x"), 0o644))

	// Below an opaque or renamed directory, reset that directory.
	err := o.Reset(bg, "m/n")
	assert.ErrorIs(t, err, overlayfs.ErrResetInside)
	assert.ErrorIs(t, o.Reset(bg, "/abs"), fs.ErrInvalid)

	require.NoError(t, o.Reset(bg, "a", "d/b", "never/changed"))
	assert.Equal(t, "A", read(t, o, "a"))
	assert.Equal(t, "B", read(t, o, "d/b"))
	assert.Equal(t, "new", read(t, o, "d/new"), "other changes are kept")
	changes, err := o.Changes(bg)
	require.NoError(t, err)
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	assert.Equal(t, []string{"d/new", "e", "m", "m/x", "moved"}, paths)

	require.NoError(t, o.Reset(bg, "moved"))
	_, err = o.Stat(bg, "moved")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = o.Stat(bg, "e")
	assert.ErrorIs(t, err, fs.ErrNotExist, "the old name of a renamed entry stays removed")

	require.NoError(t, o.Reset(bg, "."))
	changes, err = o.Changes(bg)
	require.NoError(t, err)
	assert.Empty(t, changes)
	assert.Equal(t, want, tree(t, o, true), "everything is the lower's again, inode numbers included")
	ents, err := upper.ReadDir(bg, "work")
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing is left in the work directory")
}
