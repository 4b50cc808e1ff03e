package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// blockSize is the preferred I/O size reported to the kernel (st_blksize).
const blockSize = 4096

// fillAttr translates a mount's attributes to the kernel's, filling in the
// defaults the contract leaves to the kernel face.
func fillAttr(out *fuse.Attr, a mounts.Attr) {
	out.Ino = a.Ino
	out.Size = uint64(max(a.Size, 0))
	out.Mode = mounts.UnixMode(a.Mode)
	out.Nlink = a.Nlink
	if out.Nlink == 0 {
		out.Nlink = 1
		if a.IsDir() {
			out.Nlink = 2
		}
	}
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Rdev = a.Rdev
	// Setting Blksize also stops go-fuse from recomputing Blocks.
	out.Blksize = blockSize
	out.Blocks = uint64(max(a.Blocks, 0))
	if out.Blocks == 0 && out.Size > 0 {
		// Unknown: assume the size is allocated in whole blocks, which
		// is what du(1) on a tmpfs would show.
		out.Blocks = (out.Size + blockSize - 1) / blockSize * (blockSize / 512)
	}
	atime, ctime := a.Atime, a.Ctime
	if atime.IsZero() {
		atime = a.Mtime
	}
	if ctime.IsZero() {
		ctime = a.Mtime
	}
	out.Atime, out.Atimensec = wireTime(atime)
	out.Mtime, out.Mtimensec = wireTime(a.Mtime)
	out.Ctime, out.Ctimensec = wireTime(ctime)
}

// wireTime splits t into the unsigned seconds and nanoseconds of the FUSE
// wire format. Unknown (zero) and pre-1970 times become the epoch rather
// than wrapping around.
func wireTime(t time.Time) (uint64, uint32) {
	if t.IsZero() || t.Unix() < 0 {
		return 0, 0
	}
	return uint64(t.Unix()), uint32(t.Nanosecond())
}
