package memfs

import (
	"io"
	"io/fs"
	"sync/atomic"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
)

// handle is a file opened for reading. It holds its node, not its name, so
// it keeps working after the name is unlinked or renamed; the node's
// content lives until the last handle closes.
type handle struct {
	f *FS
	// n is the node; a checkpoint restore that rewrites the node in place
	// moves open handles to a copy of what it held (see [FS.lockNode]).
	n        atomic.Pointer[node]
	name     string // as opened, for errors
	readable bool
	closed   atomic.Bool
	// changed is set by the first write or truncate through the
	// handle: closing it then syncs the store.
	changed atomic.Bool
}

// writable is a file opened for writing; it is a distinct type so that
// only such files satisfy mounts.WritableFile.
type writable struct {
	*handle
	append bool
}

var (
	_ mounts.File         = (*handle)(nil)
	_ mounts.WritableFile = (*writable)(nil)
)

// ReadAt reads the content at off; holes read as zeros. A read that reaches
// the end returns io.EOF with the bytes it got, as io.ReaderAt requires.
func (h *handle) ReadAt(p []byte, off int64) (int, error) {
	if h.closed.Load() {
		return 0, pathErr("read", h.name, fs.ErrClosed)
	}
	if !h.readable {
		return 0, pathErr("read", h.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("read", h.name, fs.ErrInvalid)
	}
	nd := h.rlock()
	n := nd.data.readAt(p, off)
	nd.mu.RUnlock()
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Stat is fstat: it reports the node, whatever happened to its name.
func (h *handle) Stat() (mounts.Attr, error) {
	if h.closed.Load() {
		return mounts.Attr{}, pathErr("stat", h.name, fs.ErrClosed)
	}
	n := h.rlock()
	defer n.mu.RUnlock()
	return n.attr(), nil
}

// lock locks and returns the handle's node, the one it holds once the lock
// is taken: a restore may move the handle while it waits.
func (h *handle) lock() *node {
	for {
		n := h.n.Load()
		n.mu.Lock()
		if h.n.Load() == n {
			return n
		}
		n.mu.Unlock()
	}
}

// rlock is lock, shared.
func (h *handle) rlock() *node {
	for {
		n := h.n.Load()
		n.mu.RLock()
		if h.n.Load() == n {
			return n
		}
		n.mu.RUnlock()
	}
}

// Close releases the handle; closing the last handle of an unlinked file
// frees its content.
func (h *handle) Close() error {
	if h.closed.Swap(true) {
		return pathErr("close", h.name, fs.ErrClosed)
	}
	// The tree lock, shared, holds the handle's change off while a
	// checkpoint is taken or restored.
	h.f.mu.RLock()
	n := h.lock()
	n.opens--
	delete(n.handles, h)
	var err error
	if n.nlink == 0 && n.opens == 0 {
		j := h.f.journal("close")
		h.f.release(j, n)
		err = h.f.commit(j, h.name)
	}
	n.mu.Unlock()
	h.f.mu.RUnlock()
	if err == nil && h.changed.Load() {
		// Close after write is where editors and tools consider a
		// file saved; make it so, as NFS's close-to-open does.
		err = h.f.sync("close", h.name)
	}
	return err
}

// WriteAt writes p at off, or at the end when the file was opened with
// O_APPEND. A write that would exceed the byte quota writes nothing.
func (w *writable) WriteAt(p []byte, off int64) (int, error) {
	const op = "write"
	if w.closed.Load() {
		return 0, pathErr(op, w.name, fs.ErrClosed)
	}
	if off < 0 {
		return 0, pathErr(op, w.name, fs.ErrInvalid)
	}
	if len(p) == 0 {
		return 0, nil
	}
	w.f.mu.RLock()
	defer w.f.mu.RUnlock()
	n := w.lock()
	defer n.mu.Unlock()
	if w.append {
		off = n.data.size
	}
	if off > maxFileSize-int64(len(p)) {
		return 0, pathErr(op, w.name, errFileTooBig)
	}
	if !w.f.reserveBytes(n.data.growth(off, len(p))) {
		return 0, pathErr(op, w.name, mounts.ErrNoSpace)
	}
	w.changed.Store(true)
	n.data.writeAt(p, off)
	n.changed(w.f.now(), true)
	j := w.f.journal(op)
	if n.ghost {
		j = nil // the store knows nothing of a restore's copy
	}
	j.write(n, off, p)
	j.inode(n)
	if err := w.f.commit(j, w.name); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Truncate sets the size of the open file.
func (w *writable) Truncate(size int64) error {
	if w.closed.Load() {
		return pathErr("truncate", w.name, fs.ErrClosed)
	}
	w.changed.Store(true)
	w.f.mu.RLock()
	defer w.f.mu.RUnlock()
	// Under the tree lock no restore moves the handle.
	return w.f.truncate(w.n.Load(), w.name, size)
}

// Sync makes every change of the whole tree made so far durable, when the
// store is a [Syncer]; otherwise every change reached the store, if any,
// before its call returned, and there is nothing to do.
func (w *writable) Sync() error {
	if w.closed.Load() {
		return pathErr("sync", w.name, fs.ErrClosed)
	}
	return w.f.sync("sync", w.name)
}
