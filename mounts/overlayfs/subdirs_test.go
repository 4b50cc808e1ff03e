package overlayfs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestSubdirsWithoutUpperLinkCounts: an upper whose directories do not
// count their subdirectories in their link count (btrfs reports 1) gets
// the merged count from its listing, the same as the one taken from the
// link count of an upper that keeps POSIX ones.
func TestSubdirsWithoutUpperLinkCounts(t *testing.T) {
	ctx := context.Background()
	lower := memfs.New(memfs.Options{})
	for _, d := range []string{"keep", "gone", "replaced", "renamed"} {
		require.NoError(t, mounts.MkdirAll(ctx, lower, "top/"+d, 0o755))
	}
	o, err := New(ctx, lower, memfs.New(memfs.Options{}), Options{})
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, o, "top/file", []byte("f"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, o, "top/new", 0o755))
	require.NoError(t, mounts.RemoveAll(ctx, o, "top/gone"))
	require.NoError(t, mounts.RemoveAll(ctx, o, "top/replaced"))
	require.NoError(t, mounts.WriteFile(ctx, o, "top/replaced", []byte("now a file"), 0o644))
	require.NoError(t, mounts.Rename(ctx, o, "top/renamed", "top/moved", 0))

	e, err := o.resolve(ctx, "top")
	require.NoError(t, err)
	require.True(t, e.upper && e.hasLower, "top is merged")
	require.GreaterOrEqual(t, e.ua.Nlink, uint32(2), "the memory upper keeps POSIX link counts")
	fromNlink, err := o.subdirs(ctx, e)
	require.NoError(t, err)
	e.ua.Nlink = 1
	fromListing, err := o.subdirs(ctx, e)
	require.NoError(t, err)
	// keep, new, moved.
	assert.Equal(t, uint32(3), fromNlink)
	assert.Equal(t, fromNlink, fromListing)
}
