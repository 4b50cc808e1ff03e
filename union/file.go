package union

import (
	"io/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

var (
	_ mounts.File         = (*file)(nil)
	_ mounts.WritableFile = (*writableFile)(nil)
	_ mounts.FDFile       = (*fdFile)(nil)
	_ mounts.FDFile       = (*fdWritableFile)(nil)
	_ mounts.WritableFile = (*fdWritableFile)(nil)
	_ mounts.ContentFile  = (*file)(nil)
)

// file is a mount's open file seen through the union: Stat reports the
// union's inode number and *fs.PathError paths are union names.
type file struct {
	f    mounts.File
	m    *mount
	name string // union name, io/fs style
}

// wrapFile wraps f. A file opened for writing stays a WritableFile; one
// opened for reading does not become one, whatever the mount's type offers.
// A host descriptor (mounts.FDFile) is offered exactly when f offers one:
// the union changes names and inode numbers, not content, so it need not
// see the reads and writes the kernel would then make itself.
func wrapFile(f mounts.File, m *mount, name string, forWriting bool) mounts.File {
	base := file{f: f, m: m, name: name}
	fd, hasFd := f.(mounts.FDFile)
	if w, ok := f.(mounts.WritableFile); ok && forWriting {
		wf := writableFile{file: base, w: w}
		if hasFd {
			return &fdWritableFile{writableFile: wf, fd: fd}
		}
		return &wf
	}
	if hasFd {
		return &fdFile{file: base, fd: fd}
	}
	return &base
}

// fix rewrites a *fs.PathError and passes anything else (io.EOF above all)
// through untouched, as io.ReaderAt callers compare it directly.
func (f *file) fix(err error) error {
	if _, ok := err.(*fs.PathError); ok {
		return f.m.rewrite("", f.name, err)
	}
	return err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.fix(err)
}

func (f *file) Stat() (mounts.Attr, error) {
	a, err := f.f.Stat()
	if err != nil {
		return mounts.Attr{}, f.fix(err)
	}
	a.Ino = f.m.ino(a.Ino)
	return a, nil
}

func (f *file) Close() error { return f.fix(f.f.Close()) }

// Content forwards the mount file's content held in memory
// (mounts.ContentFile).
func (f *file) Content() ([]byte, bool) { return mounts.Content(f.f) }

type writableFile struct {
	file
	w mounts.WritableFile
}

func (f *writableFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.w.WriteAt(p, off)
	return n, f.fix(err)
}

func (f *writableFile) Truncate(size int64) error { return f.fix(f.w.Truncate(size)) }

func (f *writableFile) Sync() error { return f.fix(f.w.Sync()) }

// fdFile and fdWritableFile are file and writableFile over a mount file
// that has a host descriptor, which they forward.
type fdFile struct {
	file
	fd mounts.FDFile
}

func (f *fdFile) Fd() uintptr { return f.fd.Fd() }

type fdWritableFile struct {
	writableFile
	fd mounts.FDFile
}

func (f *fdWritableFile) Fd() uintptr { return f.fd.Fd() }
