package fusefs

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// blockSize is the preferred I/O size reported to the kernel (st_blksize).
const blockSize = 4096

// typeBits returns the S_IF* bits for the type bits of m.
func typeBits(m fs.FileMode) uint32 {
	switch {
	case m&fs.ModeDir != 0:
		return syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		return syscall.S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		return syscall.S_IFIFO
	case m&fs.ModeSocket != 0:
		return syscall.S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		return syscall.S_IFCHR
	case m&fs.ModeDevice != 0:
		return syscall.S_IFBLK
	default:
		return syscall.S_IFREG
	}
}

// unixMode converts an fs.FileMode to a st_mode value.
func unixMode(m fs.FileMode) uint32 {
	u := typeBits(m) | uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	return u
}

// permMode converts the permission part of a st_mode value (as chmod, mkdir
// and create pass it) to an fs.FileMode without type bits.
func permMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if u&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if u&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// fillAttr translates a mount's attributes to the kernel's, filling in the
// defaults the contract leaves to the kernel face.
func fillAttr(out *fuse.Attr, a mounts.Attr) {
	out.Ino = a.Ino
	out.Size = uint64(max(a.Size, 0))
	out.Mode = unixMode(a.Mode)
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
