package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vfsmount/vfsmount/mounts"
)

func TestToErrno(t *testing.T) {
	pe := func(err error) error { return mounts.PathErr("op", "a/b", err) }
	tests := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"nil", nil, 0},
		// Sentinels of package mounts (Errno values) pass through.
		{"ErrReadOnly", pe(mounts.ErrReadOnly), syscall.EROFS},
		{"ErrNotSupported", pe(mounts.ErrNotSupported), syscall.ENOTSUP},
		{"ErrCrossMount", pe(mounts.ErrCrossMount), syscall.EXDEV},
		{"ErrBusy", pe(mounts.ErrBusy), syscall.EBUSY},
		{"ErrNotDir", pe(mounts.ErrNotDir), syscall.ENOTDIR},
		{"ErrIsDir", pe(mounts.ErrIsDir), syscall.EISDIR},
		{"ErrNotEmpty", pe(mounts.ErrNotEmpty), syscall.ENOTEMPTY},
		{"ErrNoSpace", pe(mounts.ErrNoSpace), syscall.ENOSPC},
		{"ErrLoop", pe(mounts.ErrLoop), syscall.ELOOP},
		{"ErrNameTooLong", pe(mounts.ErrNameTooLong), syscall.ENAMETOOLONG},
		{"ErrNoAttr", pe(mounts.ErrNoAttr), syscall.ENODATA},
		// Sentinels that are not Errno values.
		{"ErrDenied", pe(mounts.ErrDenied), syscall.EACCES},
		{"ErrEscapes", pe(mounts.ErrEscapes), syscall.EACCES},
		{"fs.ErrNotExist", pe(fs.ErrNotExist), syscall.ENOENT},
		{"fs.ErrExist", pe(fs.ErrExist), syscall.EEXIST},
		{"fs.ErrPermission", pe(fs.ErrPermission), syscall.EPERM},
		{"fs.ErrInvalid", pe(fs.ErrInvalid), syscall.EINVAL},
		{"fs.ErrClosed", pe(fs.ErrClosed), syscall.EBADF},
		{"errors.ErrUnsupported", pe(errors.ErrUnsupported), syscall.ENOTSUP},
		{"context.Canceled", pe(context.Canceled), syscall.EINTR},
		{"context.DeadlineExceeded", pe(context.DeadlineExceeded), syscall.ETIMEDOUT},
		{"os.ErrDeadlineExceeded", os.ErrDeadlineExceeded, syscall.ETIMEDOUT},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, syscall.EIO},
		// Host errors pass through, bare or wrapped at any depth.
		{"bare errno", syscall.ENOSPC, syscall.ENOSPC},
		{"host errno in PathError", pe(syscall.EDQUOT), syscall.EDQUOT},
		{"double wrapped", fmt.Errorf("outer: %w", pe(syscall.EMLINK)), syscall.EMLINK},
		{"wrapped sentinel", fmt.Errorf("union: %w", pe(fs.ErrNotExist)), syscall.ENOENT},
		{"joined", errors.Join(errors.New("x"), pe(mounts.ErrBusy)), syscall.EBUSY},
		{"os.PathError", &os.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, syscall.ENOENT},
		// Unknown.
		{"unknown", errors.New("disk on fire"), syscall.EIO},
		{"unknown wrapped", pe(errors.New("disk on fire")), syscall.EIO},
		{"wrapped zero errno", pe(syscall.Errno(0)), syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ToErrno(tt.err), "got %v, want %v", ToErrno(tt.err), tt.want)
		})
	}
}

func TestErrLogLogsUnknownOnce(t *testing.T) {
	var buf bytes.Buffer
	l := errLog{log: slog.New(slog.NewTextHandler(&buf, nil))}
	fire := mounts.PathErr("read", "x", errors.New("disk on fire"))
	flood := mounts.PathErr("read", "y", errors.New("disk flooded"))

	assert.Equal(t, syscall.EIO, l.errno("read", fire))
	assert.Equal(t, syscall.EIO, l.errno("read", fire))
	// The same cause under another name is not a new message.
	assert.Equal(t, syscall.EIO, l.errno("read", mounts.PathErr("read", "other", errors.New("disk on fire"))))
	assert.Equal(t, syscall.EIO, l.errno("write", flood))
	// Known errors, EIO included, are answered without a log line.
	assert.Equal(t, syscall.ENOENT, l.errno("lookup", mounts.PathErr("lookup", "z", fs.ErrNotExist)))
	assert.Equal(t, syscall.EIO, l.errno("read", mounts.PathErr("read", "z", syscall.EIO)))

	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "disk on fire"), "log:\n%s", out)
	assert.Equal(t, 1, strings.Count(out, "disk flooded"), "log:\n%s", out)
	assert.Equal(t, 2, strings.Count(out, "\n"), "want exactly two log lines:\n%s", out)
}

// asErrno is an error that answers errors.As for a syscall.Errno itself.
type asErrno struct{ e syscall.Errno }

func (a asErrno) Error() string { return "as " + a.e.Error() }
func (a asErrno) As(target any) bool {
	if p, ok := target.(*syscall.Errno); ok {
		*p = a.e
		return true
	}
	return false
}

// TestErrnoInIsErrorsAs: the allocation-free walk finds what errors.As
// finds, through wrapping, joins and As methods.
func TestErrnoInIsErrorsAs(t *testing.T) {
	for _, err := range []error{
		syscall.ENOENT,
		fmt.Errorf("a: %w", syscall.EROFS),
		&fs.PathError{Op: "open", Path: "x", Err: fmt.Errorf("b: %w", syscall.EXDEV)},
		errors.Join(errors.New("plain"), fmt.Errorf("c: %w", syscall.EBUSY)),
		fmt.Errorf("d: %w", asErrno{syscall.ENOSPC}),
		errors.New("no errno"),
		fmt.Errorf("e: %w", errors.Join(errors.New("x"), errors.New("y"))),
	} {
		var want syscall.Errno
		wantOK := errors.As(err, &want)
		got, ok := errnoIn(err)
		if ok != wantOK || got != want {
			t.Errorf("errnoIn(%v) = %v, %v; errors.As says %v, %v", err, got, ok, want, wantOK)
		}
	}
	missing := error(&fs.PathError{Op: "stat", Path: "x", Err: syscall.ENOENT})
	if n := testing.AllocsPerRun(100, func() { _ = ToErrno(missing) }); n != 0 {
		t.Errorf("ToErrno allocates %v times per call, want none", n)
	}
}
