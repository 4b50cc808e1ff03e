package hostfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// file is a regular file opened for reading. Its methods rewrap the os
// package's errors, whose paths are not the mount's names.
type file struct {
	f *os.File
	// fd is f's descriptor; the os.File holds it open and closes it.
	fd   int
	name string
	fsys *ReadOnlyFS
	// created is set by openFile when O_CREATE made the file.
	created bool
}

// Created reports whether the open that returned f made the file.
func (f *file) Created() bool { return f.created }

// writable is a file opened for writing. It is a separate type so a file
// from Open does not satisfy mounts.WritableFile.
type writable struct {
	*file
}

var (
	_ mounts.FDFile       = (*file)(nil)
	_ mounts.WritableFile = (*writable)(nil)
	_ mounts.FDFile       = (*writable)(nil)
)

// ReadAt reads with pread(2) until p is full or the file ends; it is safe
// for concurrent use. (os.File.ReadAt would drop the count of a read that
// ends in an error.)
func (h *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, mounts.PathErr("read", h.name, fs.ErrInvalid)
	}
	n := 0
	for n < len(p) {
		m, err := unix.Pread(h.fd, p[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, h.fsys.fail("read", h.name, err)
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	runtime.KeepAlive(h.f)
	return n, nil
}

// Stat is fstat(2): it works after the name was removed.
func (h *file) Stat() (mounts.Attr, error) {
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return mounts.Attr{}, h.fsys.fail("stat", h.name, err)
	}
	return h.fsys.attr(&st), nil
}

// Close closes the descriptor. Errors a write left behind (NFS, say) are
// reported here as the host reports them.
func (h *file) Close() error {
	if err := h.f.Close(); err != nil {
		return h.fsys.fail("close", h.name, err)
	}
	return nil
}

// Fd returns the host descriptor for FUSE passthrough; see mounts.FDFile.
func (h *file) Fd() uintptr { return uintptr(h.fd) }

// WriteAt writes with pwrite(2). On a file opened with O_APPEND Linux writes
// at the end whatever the offset, which is what the contract asks. A short
// write returns the count that landed with the host's error (ENOSPC, EDQUOT,
// EIO) unchanged; os.File.WriteAt would lose that count, and refuses
// O_APPEND files outright.
func (w *writable) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, mounts.PathErr("write", w.name, fs.ErrInvalid)
	}
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(w.fd, p[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, w.fsys.fail("write", w.name, err)
		}
		if m == 0 {
			return n, mounts.PathErr("write", w.name, io.ErrShortWrite)
		}
		n += m
	}
	runtime.KeepAlive(w.f)
	return n, nil
}

// Truncate is ftruncate(2).
func (w *writable) Truncate(size int64) error {
	if err := w.f.Truncate(size); err != nil {
		return w.fsys.fail("truncate", w.name, err)
	}
	return nil
}

// Sync is fsync(2).
func (w *writable) Sync() error {
	if err := w.f.Sync(); err != nil {
		return w.fsys.fail("sync", w.name, err)
	}
	return nil
}
