package fusefs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
)

// errnoTable maps sentinel errors that are not themselves a syscall.Errno.
// Order matters: mounts.ErrDenied also matches fs.ErrPermission, and must
// win so the caller sees EACCES (refused by policy) rather than EPERM.
var errnoTable = []struct {
	target error
	errno  syscall.Errno
}{
	{mounts.ErrDenied, syscall.EACCES},
	{mounts.ErrEscapes, syscall.EACCES},
	{fs.ErrNotExist, syscall.ENOENT},
	{fs.ErrExist, syscall.EEXIST},
	{fs.ErrPermission, syscall.EPERM},
	{fs.ErrInvalid, syscall.EINVAL},
	{fs.ErrClosed, syscall.EBADF},
	{errors.ErrUnsupported, syscall.ENOTSUP},
	{context.Canceled, syscall.EINTR},
	{context.DeadlineExceeded, syscall.ETIMEDOUT},
	{os.ErrDeadlineExceeded, syscall.ETIMEDOUT},
	{io.ErrUnexpectedEOF, syscall.EIO},
}

// ToErrno is the one mapping from the errors of package mounts to errno
// values. nil is 0. A syscall.Errno anywhere in the chain passes through
// unchanged: the sentinels of package mounts (ErrReadOnly, ErrCrossMount,
// ErrBusy, ...) are Errno values, and the host mount wraps the host's own.
// Then the io/fs sentinels and the few others in the table. Anything else
// is EIO.
func ToErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := errnoIn(err); ok {
		if e == 0 {
			// A wrapped "success" is a bug below us, not success.
			return syscall.EIO
		}
		return e
	}
	for _, m := range errnoTable {
		if errors.Is(err, m.target) {
			return m.errno
		}
	}
	return syscall.EIO
}

// errnoIn is errors.As(err, &errno), walking the chain the same way, without
// the allocation errors.As makes of its target on every call: every failed
// request (a missed lookup above all) comes through here.
func errnoIn(err error) (syscall.Errno, bool) {
	for err != nil {
		switch x := err.(type) {
		case syscall.Errno:
			return x, true
		case interface{ As(any) bool }:
			var e syscall.Errno
			if x.As(&e) {
				return e, true
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range x.Unwrap() {
				if e, ok := errnoIn(inner); ok {
					return e, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// maxLoggedUnknown bounds the memory spent remembering which unknown errors
// were already logged. Past it, unknown errors are logged every time: a
// flood of distinct messages is itself worth seeing.
const maxLoggedUnknown = 1024

// errLog turns errors into errnos for the handlers, logging each distinct
// unknown error (one that maps to EIO without being EIO) once. Distinct
// means a distinct cause: the same failure under another name is not new.
type errLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]struct{}
}

func (l *errLog) errno(op string, err error) syscall.Errno {
	e := ToErrno(err)
	if e != syscall.EIO || errors.Is(err, syscall.EIO) {
		return e
	}
	key := cause(err).Error()
	l.mu.Lock()
	_, dup := l.seen[key]
	if !dup && len(l.seen) < maxLoggedUnknown {
		if l.seen == nil {
			l.seen = make(map[string]struct{})
		}
		l.seen[key] = struct{}{}
	}
	l.mu.Unlock()
	if !dup {
		l.log.Warn("fusefs: unmapped error answered with EIO", "op", op, "err", err.Error())
	}
	return e
}

// cause strips the *fs.PathError layers off err, so that one failure seen
// under many names counts as one distinct message.
func cause(err error) error {
	for {
		pe, ok := err.(*fs.PathError)
		if !ok || pe.Err == nil {
			return err
		}
		err = pe.Err
	}
}
