package fusefs

import (
	"context"
	"errors"
	"io"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// handle is an open file: the mount's File (a WritableFile when opened for
// writing) and the node it belongs to.
type handle struct {
	n *node
	f mounts.File
	// passthrough is set when the kernel reads and writes the host file
	// itself (see "# Passthrough" in the package doc); such a handle is
	// wrapped in a ptHandle.
	passthrough bool
}

// ptHandle is a handle whose file is a host file the kernel may read and
// write directly. go-fuse registers the descriptor at the first open of
// the node and shares it with every later open until the last is released.
type ptHandle struct {
	*handle
	fd int
}

// PassthroughFd hands the host descriptor to go-fuse (fs.FilePassthroughFder).
func (h *ptHandle) PassthroughFd() (int, bool) { return h.fd, true }

// asHandle returns the handle behind a go-fuse file handle, or nil.
func asHandle(f gofs.FileHandle) *handle {
	switch h := f.(type) {
	case *handle:
		return h
	case *ptHandle:
		return h.handle
	}
	return nil
}

var (
	_ = (gofs.FileReader)((*handle)(nil))
	_ = (gofs.FileWriter)((*handle)(nil))
	_ = (gofs.FileFsyncer)((*handle)(nil))
	_ = (gofs.FileReleaser)((*handle)(nil))

	_ = (gofs.FilePassthroughFder)((*ptHandle)(nil))
)

// addHandle registers a new open file of n and returns what go-fuse gets:
// a ptHandle when the kernel should read and write the host file itself,
// the plain handle otherwise.
func (n *node) addHandle(f mounts.File) gofs.FileHandle {
	h := &handle{n: n, f: f}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.open == nil {
		n.open = make(map[*handle]struct{})
	}
	fdf, hasFd := f.(mounts.FDFile)
	// The kernel refuses (EIO) to mix passthrough and plain opens of one
	// inode: the first open decides, later ones follow it.
	h.passthrough = hasFd && n.conn.passthrough.Load() && (len(n.open) == 0 || n.ptOpen > 0)
	n.open[h] = struct{}{}
	if !h.passthrough {
		return h
	}
	n.ptOpen++
	return &ptHandle{handle: h, fd: int(fdf.Fd())}
}

// anyHandle returns one open handle of n, or nil.
func (n *node) anyHandle() *handle {
	n.mu.Lock()
	defer n.mu.Unlock()
	for h := range n.open {
		return h
	}
	return nil
}

// handleWriter returns h's file as a WritableFile when h is a handle opened
// for writing.
func handleWriter(h *handle) (mounts.WritableFile, bool) {
	if h == nil {
		return nil, false
	}
	wf, ok := h.f.(mounts.WritableFile)
	return wf, ok
}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (res fuse.ReadResult, errno syscall.Errno) {
	defer h.n.conn.rescue("read", &errno)
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.n.conn.errs.errno("read", err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (written uint32, errno syscall.Errno) {
	defer h.n.conn.rescue("write", &errno)
	wf, ok := handleWriter(h)
	if !ok {
		// Opened read-only; the kernel normally refuses this itself.
		return 0, syscall.EBADF
	}
	h.n.wrote.Store(true)
	n, err := wf.WriteAt(data, off)
	if err != nil && n == 0 {
		return 0, h.n.conn.errs.errno("write", err)
	}
	// A short write reports what was written; the kernel retries the
	// rest and gets the error then.
	return uint32(n), 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) (errno syscall.Errno) {
	defer h.n.conn.rescue("fsync", &errno)
	wf, ok := handleWriter(h)
	if !ok {
		// fsync of a read-only descriptor is valid and has nothing
		// to make durable.
		return 0
	}
	return h.n.conn.errs.errno("fsync", wf.Sync())
}

func (h *handle) Release(ctx context.Context) (errno syscall.Errno) {
	defer h.n.conn.rescue("release", &errno)
	h.n.mu.Lock()
	delete(h.n.open, h)
	if h.passthrough {
		h.n.ptOpen--
	}
	h.n.mu.Unlock()
	return h.n.conn.errs.errno("release", h.f.Close())
}
