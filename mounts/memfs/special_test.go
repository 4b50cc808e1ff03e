package memfs_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestMknodCallers: a device needs a caller that may make one; a FIFO or a
// socket does not, and belongs to its caller.
func TestMknodCallers(t *testing.T) {
	fsys, _ := newFS(t, memfs.Options{})
	user := mounts.WithCaller(context.Background(), mounts.Caller{Uid: 1001, Gid: 1002, Face: "tool"})
	root := mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool"})
	kernel := mounts.WithCaller(context.Background(), mounts.Caller{Uid: 1001, Gid: 1002, Face: "kernel"})
	null := mounts.MakeDev(1, 3)

	err := fsys.Mknod(user, "dev", fs.ModeDevice|fs.ModeCharDevice|0o666, null)
	assert.ErrorIs(t, err, fs.ErrPermission, "a device for a tool caller that is not root")
	_, err = fsys.Stat(user, "dev")
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was made")

	require.NoError(t, fsys.Mknod(root, "dev", fs.ModeDevice|fs.ModeCharDevice|0o666, null), "root's device")
	require.NoError(t, fsys.Mknod(kernel, "kdev", fs.ModeDevice|0o600, null),
		"a kernel-face caller: the kernel checked CAP_MKNOD")

	require.NoError(t, fsys.Mknod(user, "fifo", fs.ModeNamedPipe|0o640, null))
	a, err := fsys.Stat(user, "fifo")
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{1001, 1002}, [2]uint32{a.Uid, a.Gid}, "owner of the FIFO")
	assert.Zero(t, a.Rdev, "a FIFO keeps no device number")

	err = fsys.Mknod(user, "odd", fs.ModeIrregular|0o644, 0)
	assert.ErrorIs(t, err, fs.ErrInvalid, "an unknown type")
	err = fsys.Mknod(user, "fifo", fs.ModeSocket|0o644, 0)
	assert.ErrorIs(t, err, fs.ErrExist)
	_, err = fsys.Open(user, "fifo")
	assert.ErrorIs(t, err, mounts.ErrSpecial)
	_, err = fsys.GetXattr(user, "fifo", "user.x")
	assert.ErrorIs(t, err, mounts.ErrNoAttr)
	assert.ErrorIs(t, fsys.SetXattr(user, "fifo", "user.x", []byte("v"), 0), fs.ErrPermission,
		"no user xattrs on a FIFO, as on Linux")
}
