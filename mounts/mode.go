package mounts

import (
	"io/fs"
	"syscall"
)

// Mode bits of st_mode, spelled out once for every mount and face that
// talks to the kernel.
const (
	modeType = syscall.S_IFMT
	modePerm = 0o7777 // permission bits plus setuid, setgid, sticky
)

// TypeBits returns the S_IF* bits of m's type (S_IFREG for a regular file).
func TypeBits(m fs.FileMode) uint32 {
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

// UnixPerm returns the st_mode permission bits of m: rwx for all three,
// plus setuid, setgid and sticky. Type bits are dropped.
func UnixPerm(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
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

// UnixMode converts m to a whole st_mode value: type and permission bits.
func UnixMode(m fs.FileMode) uint32 { return TypeBits(m) | UnixPerm(m) }

// PermMode converts the permission bits of an st_mode value (as chmod,
// mkdir and open pass them) to an fs.FileMode without type bits.
func PermMode(u uint32) fs.FileMode {
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

// FileModeOf converts a whole st_mode value to an fs.FileMode, as os does.
func FileModeOf(u uint32) fs.FileMode {
	m := PermMode(u & modePerm)
	switch u & modeType {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
