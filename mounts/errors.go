package mounts

import (
	"errors"
	"io/fs"
	"syscall"
)

// Sentinel errors of the contract. Where io/fs already has one
// (fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrInvalid) it is used
// instead. The ones that have a natural errno are syscall.Errno values, so
// errors.Is works both against the sentinel and against a wrapped Errno from
// the host (errors.Is(syscall.ENOTEMPTY, ErrNotEmpty) is true).
var (
	// ErrReadOnly: the mount has no capability to change anything (EROFS).
	ErrReadOnly error = syscall.EROFS
	// ErrNotSupported: the mount is writable but lacks this verb (ENOTSUP).
	ErrNotSupported error = syscall.ENOTSUP
	// ErrCrossMount: a rename or link would cross two mounts (EXDEV).
	ErrCrossMount error = syscall.EXDEV
	// ErrBusy: the name is a mount point or a synthetic directory (EBUSY).
	ErrBusy error = syscall.EBUSY
	// ErrNotDir: a path component, or the target of a directory verb, is
	// not a directory (ENOTDIR).
	ErrNotDir error = syscall.ENOTDIR
	// ErrIsDir: a file verb names a directory (EISDIR).
	ErrIsDir error = syscall.EISDIR
	// ErrNotEmpty: the directory has entries (ENOTEMPTY).
	ErrNotEmpty error = syscall.ENOTEMPTY
	// ErrNoSpace: a quota or the device is full (ENOSPC).
	ErrNoSpace error = syscall.ENOSPC
	// ErrLoop: too many symlinks, or a symlink where none may be (ELOOP).
	ErrLoop error = syscall.ELOOP
	// ErrNameTooLong: a name component is over 255 bytes (ENAMETOOLONG).
	ErrNameTooLong error = syscall.ENAMETOOLONG
	// ErrNoAttr: the extended attribute does not exist (ENODATA).
	ErrNoAttr error = syscall.ENODATA
	// ErrSpecial: a file verb names a FIFO, a socket or a device, whose
	// content is the kernel's, not the mount's (ENXIO, as open(2) of a
	// socket answers).
	ErrSpecial error = syscall.ENXIO

	// ErrDenied: a policy refused the operation (EACCES). It is distinct
	// from fs.ErrPermission (EPERM-like) so a model can be told why.
	ErrDenied = &deniedError{}
	// ErrEscapes: the operation would leave the mount's root (EACCES
	// through the kernel; the host mount reports it, never performs it).
	ErrEscapes = errors.New("path escapes the mount root")
)

type deniedError struct{}

func (*deniedError) Error() string { return "denied by policy" }

// Is lets errors.Is(ErrDenied, fs.ErrPermission) hold, so generic callers
// that only know io/fs still see a permission error.
func (*deniedError) Is(target error) bool { return target == fs.ErrPermission }

// PathErr builds the *fs.PathError every mount returns.
func PathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}
