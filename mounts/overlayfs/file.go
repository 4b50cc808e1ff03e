package overlayfs

import (
	"errors"
	"io/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

// file is an open file of either layer, seen through the overlay: fstat
// reports the overlay's inode number (as Stat does), and *fs.PathError
// values carry the caller's name, not the layer's.
type file struct {
	fl    mounts.File
	name  string
	m     meta
	upper bool
}

// wfile is a file opened for writing; always the upper's.
type wfile struct {
	*file
	w     mounts.WritableFile
	j     *Journal // notes each write, when set
	jname string
}

var (
	_ mounts.File         = (*file)(nil)
	_ mounts.WritableFile = (*wfile)(nil)
)

func wrap(fl mounts.File, name string, m meta, upper bool) mounts.File {
	h := &file{fl: fl, name: name, m: m, upper: upper}
	if w, ok := fl.(mounts.WritableFile); ok {
		return &wfile{file: h, w: w}
	}
	return h
}

// err renames a layer's *fs.PathError; io.EOF and the like pass unchanged.
func (h *file) err(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return mounts.PathErr(pe.Op, h.name, pe.Err)
	}
	return err
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.fl.ReadAt(p, off)
	return n, h.err(err)
}

// Stat is fstat, with the overlay's inode number.
func (h *file) Stat() (mounts.Attr, error) {
	a, err := h.fl.Stat()
	if err != nil {
		return a, h.err(err)
	}
	if h.upper {
		a.Ino = inoOf(a, h.m)
	}
	return a, nil
}

func (h *file) Close() error { return h.err(h.fl.Close()) }

func (h *wfile) WriteAt(p []byte, off int64) (int, error) {
	n, err := h.w.WriteAt(p, off)
	h.noted()
	return n, h.err(err)
}

func (h *wfile) Truncate(size int64) error {
	err := h.w.Truncate(size)
	h.noted()
	return h.err(err)
}

// noted records a change made through the handle, after it is made.
func (h *wfile) noted() {
	if h.j != nil {
		h.j.note(false, h.jname)
	}
}
func (h *wfile) Sync() error { return h.err(h.w.Sync()) }
