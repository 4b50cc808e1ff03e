package mounts

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
)

// IOFS adapts fsys to io/fs for code that speaks io/fs (fstest.TestFS,
// fs.WalkDir, template loaders). Open and Stat follow symlinks that stay
// inside the mount; Lstat and ReadLink do not (fs.ReadLinkFS). ctx is used
// for every call: the io/fs interfaces have no context parameter.
func IOFS(ctx context.Context, fsys FS) fs.FS { return &ioFS{ctx: ctx, fsys: fsys} }

type ioFS struct {
	ctx  context.Context
	fsys FS
}

var (
	_ fs.ReadDirFS  = (*ioFS)(nil)
	_ fs.StatFS     = (*ioFS)(nil)
	_ fs.ReadLinkFS = (*ioFS)(nil)
)

// resolve follows symlinks in every component of name ([Resolve]), confined
// to the mount: a link that climbs out of the root fails with ErrEscapes.
// Every error names op and name.
func (f *ioFS) resolve(op, name string) (string, Attr, error) {
	if !ValidPath(name) {
		return "", Attr{}, PathErr(op, name, fs.ErrInvalid)
	}
	r, err := Resolve(f.ctx, f.fsys, name, ResolveOptions{})
	if err != nil {
		return "", Attr{}, PathErr(op, name, unwrap(err))
	}
	return r.Name, r.Attr, nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (f *ioFS) Open(name string) (fs.File, error) {
	real, a, err := f.resolve("open", name)
	if err != nil {
		return nil, err
	}
	_, base := Split(name)
	if a.IsDir() {
		ents, err := f.fsys.ReadDir(f.ctx, real)
		if err != nil {
			return nil, PathErr("open", name, unwrap(err))
		}
		return &ioDir{fsys: f, dir: real, name: base, attr: a, ents: ents}, nil
	}
	file, err := f.fsys.Open(f.ctx, real)
	if err != nil {
		return nil, PathErr("open", name, unwrap(err))
	}
	return &ioFile{f: file, name: base}, nil
}

func (f *ioFS) Stat(name string) (fs.FileInfo, error) {
	_, a, err := f.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	_, base := Split(name)
	return a.FileInfo(base), nil
}

func (f *ioFS) Lstat(name string) (fs.FileInfo, error) {
	if !ValidPath(name) {
		return nil, PathErr("lstat", name, fs.ErrInvalid)
	}
	a, err := f.fsys.Stat(f.ctx, name)
	if err != nil {
		return nil, err
	}
	_, base := Split(name)
	return a.FileInfo(base), nil
}

func (f *ioFS) ReadLink(name string) (string, error) {
	return f.fsys.ReadLink(f.ctx, name)
}

func (f *ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	real, a, err := f.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	if !a.IsDir() {
		return nil, PathErr("readdir", name, ErrNotDir)
	}
	ents, err := f.fsys.ReadDir(f.ctx, real)
	if err != nil {
		return nil, PathErr("readdir", name, unwrap(err))
	}
	out := make([]fs.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = &ioDirEntry{fsys: f, dir: real, e: e}
	}
	return out, nil
}

type ioDirEntry struct {
	fsys *ioFS
	dir  string
	e    DirEntry
}

func (d *ioDirEntry) Name() string      { return d.e.Name }
func (d *ioDirEntry) IsDir() bool       { return d.e.Type.IsDir() }
func (d *ioDirEntry) Type() fs.FileMode { return d.e.Type.Type() }
func (d *ioDirEntry) Info() (fs.FileInfo, error) {
	a, err := d.fsys.fsys.Stat(d.fsys.ctx, Join(d.dir, d.e.Name))
	if err != nil {
		return nil, err
	}
	return a.FileInfo(d.e.Name), nil
}
func (d *ioDirEntry) String() string { return fs.FormatDirEntry(d) }

type ioFile struct {
	f    File
	name string
	mu   sync.Mutex
	off  int64
}

func (f *ioFile) Stat() (fs.FileInfo, error) {
	a, err := f.f.Stat()
	if err != nil {
		return nil, err
	}
	return a.FileInfo(f.name), nil
}

func (f *ioFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	if err == nil && n == 0 && len(p) > 0 {
		err = io.EOF
	}
	return n, err
}

func (f *ioFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

func (f *ioFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		a, err := f.f.Stat()
		if err != nil {
			return 0, err
		}
		offset += a.Size
	default:
		return 0, PathErr("seek", f.name, fs.ErrInvalid)
	}
	if offset < 0 {
		return 0, PathErr("seek", f.name, fs.ErrInvalid)
	}
	f.off = offset
	return offset, nil
}

func (f *ioFile) Close() error { return f.f.Close() }

type ioDir struct {
	fsys *ioFS
	dir  string
	name string
	attr Attr
	ents []DirEntry
	pos  int
}

func (d *ioDir) Stat() (fs.FileInfo, error) { return d.attr.FileInfo(d.name), nil }
func (d *ioDir) Read([]byte) (int, error) {
	return 0, PathErr("read", d.name, ErrIsDir)
}
func (d *ioDir) Close() error { return nil }

func (d *ioDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.pos:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && len(rest) > n {
		rest = rest[:n]
	}
	d.pos += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, e := range rest {
		out[i] = &ioDirEntry{fsys: d.fsys, dir: d.dir, e: e}
	}
	return out, nil
}
