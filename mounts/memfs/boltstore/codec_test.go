package boltstore

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestInodeCodecs: only a device is written with codec 2, so a store that
// holds none stays readable by a binary that knows codec 1 alone; both
// decode to what was encoded, and an unknown codec is refused.
func TestInodeCodecs(t *testing.T) {
	now := time.Unix(1700000000, 5).UTC()
	for _, r := range []memfs.InodeRecord{
		{Ino: 2, Mode: 0o644, Nlink: 1, Size: 3, Atime: now, Mtime: now, Ctime: now},
		{Ino: 3, Mode: fs.ModeNamedPipe | 0o640, Nlink: 1, Atime: now, Mtime: now, Ctime: now,
			Xattrs: map[string][]byte{"trusted.x": []byte("y")}},
		{Ino: 4, Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, Nlink: 1, Rdev: mounts.MakeDev(1, 3),
			Atime: now, Mtime: now, Ctime: now},
	} {
		v := encodeInode(&r)
		want := byte(inodeCodec)
		if r.Rdev != 0 {
			want = inodeCodecDevice
		}
		assert.Equal(t, want, v[0], "codec of %v", r.Mode)
		got, err := decodeInode(r.Ino, v)
		require.NoError(t, err)
		got.Atime, got.Mtime, got.Ctime = got.Atime.UTC(), got.Mtime.UTC(), got.Ctime.UTC()
		assert.Equal(t, r, got)
		if r.Rdev != 0 {
			_, err := decodeInode(r.Ino, v[:len(v)-2])
			assert.Error(t, err, "a device record cut short")
		}
	}
	_, err := decodeInode(5, []byte{3, 0, 0, 0, 0})
	assert.ErrorContains(t, err, "unknown encoding 3")
}
