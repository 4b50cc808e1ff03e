package overlayfs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// offering is a lower that offers pages when the test says so.
type offering struct {
	mounts.FS
	sink mounts.PageSink
}

func (o *offering) OfferPages(sink mounts.PageSink) bool { o.sink = sink; return true }

// TestOfferPagesOfUntouchedNames: the lower's offers reach the sink for
// the names the overlay shows as the lower has them, and for no name the
// upper changed, removed, replaced or moved.
func TestOfferPagesOfUntouchedNames(t *testing.T) {
	mem, _ := memLower(t, "kept", "same", "written", "removed", "replaced", "d/moved", "d/kept", "chmodded")
	lower := &offering{FS: mem}
	o, _ := newOverlay(t, lower)
	require.NoError(t, mounts.WriteFile(bg, o, "written", []byte("new"), 0o644))
	require.NoError(t, mounts.Unlink(bg, o, "removed"))
	require.NoError(t, mounts.Rename(bg, o, "same", "replaced", 0))
	require.NoError(t, mounts.WriteFile(bg, o, "same", []byte("again"), 0o644))
	require.NoError(t, mounts.Rename(bg, o, "d", "e", 0))
	require.NoError(t, mounts.Chmod(bg, o, "chmodded", 0o600))

	var got []string
	require.True(t, mounts.OfferPages(o, func(name string, _ []byte) { got = append(got, name) }))
	require.NotNil(t, lower.sink)
	for _, name := range []string{"kept", "same", "written", "removed", "replaced", "d/moved", "d/kept", "chmodded", "untouched/x"} {
		lower.sink(name, []byte(name))
	}
	// chmodded is copied up (metadata) but its content is the lower's;
	// the overlay passes on only what it serves from the lower itself.
	assert.Equal(t, []string{"kept"}, got, "every other offered name was changed, or is absent")

	mem2, _ := memLower(t, "a", "dir/b")
	lower2 := &offering{FS: mem2}
	o2, _ := newOverlay(t, lower2)
	got = nil
	require.True(t, mounts.OfferPages(o2, func(name string, data []byte) { got = append(got, name+"="+string(data)) }))
	lower2.sink("a", []byte("A"))
	lower2.sink("dir/b", []byte("B"))
	assert.Equal(t, []string{"a=A", "dir/b=B"}, got)

	require.True(t, mounts.OfferPages(o2, nil))
	assert.Nil(t, lower2.sink, "unregistered below too")
}
