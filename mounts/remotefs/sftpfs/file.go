package sftpfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/pkg/sftp"

	"github.com/vfsmount/vfsmount/mounts"
)

// typeCheck refuses to open what is not a regular file, as the contract
// says: a directory (EISDIR), a symlink (ELOOP: never followed), a FIFO,
// socket or device (ENXIO).
func typeCheck(a mounts.Attr) error {
	switch {
	case a.IsDir():
		return mounts.ErrIsDir
	case a.Mode.Type() == fs.ModeSymlink:
		return mounts.ErrLoop
	case !a.Mode.IsRegular():
		return mounts.ErrSpecial
	}
	return nil
}

// Open implements mounts.FS.
func (f *ReadOnlyFS) Open(ctx context.Context, name string) (mounts.File, error) {
	if err := mounts.CheckPath("open", name); err != nil {
		return nil, err
	}
	var h *sftp.File
	var cn *conn
	err := f.do(ctx, "open", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if err := typeCheck(a); err != nil {
			return err
		}
		cn = c
		h, err = c.sc.Open(w.abs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &file{f: f, c: cn, h: h, name: name}, nil
}

// file is an open file on the server.
type file struct {
	f    *ReadOnlyFS
	c    *conn
	h    *sftp.File
	name string
}

// ReadAt implements io.ReaderAt. The read lands in a buffer of its own
// (a read that times out may still be answered, later).
func (x *file) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	buf := make([]byte, len(p))
	var n int
	var eof bool
	err := x.f.on(context.Background(), x.c, "read", x.name, func(*conn) error {
		var err error
		n, err = x.h.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			eof, err = true, nil
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	copy(p, buf[:n])
	if eof || n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Stat implements mounts.File: fstat of the handle.
func (x *file) Stat() (mounts.Attr, error) {
	var a mounts.Attr
	err := x.f.on(context.Background(), x.c, "fstat", x.name, func(*conn) error {
		fi, err := x.h.Stat()
		if err == nil {
			a = attr(fi)
		}
		return err
	})
	if err != nil {
		return mounts.Attr{}, err // a timed-out call may still write a
	}
	return a, nil
}

// Close implements mounts.File.
func (x *file) Close() error {
	if !x.c.alive() {
		return nil // the server closed the handle with its session
	}
	return x.f.on(context.Background(), x.c, "close", x.name, func(*conn) error { return x.h.Close() })
}

// writable is a file opened for writing.
type writable struct{ file }

// WriteAt implements io.WriterAt. With O_APPEND the server writes at
// the end whatever the offset.
func (x *writable) WriteAt(p []byte, off int64) (int, error) {
	buf := append([]byte(nil), p...)
	var n int
	err := x.f.on(context.Background(), x.c, "write", x.name, func(*conn) error {
		var err error
		n, err = x.h.WriteAt(buf, off)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Truncate implements mounts.WritableFile.
func (x *writable) Truncate(size int64) error {
	return x.f.on(context.Background(), x.c, "truncate", x.name, func(*conn) error { return x.h.Truncate(size) })
}

// Sync implements mounts.WritableFile with fsync@openssh.com: it returns
// once the server's fsync(2) did.
func (x *writable) Sync() error {
	return x.f.on(context.Background(), x.c, "fsync", x.name, func(c *conn) error {
		if !c.fsync {
			return mounts.ErrNotSupported
		}
		return x.h.Sync()
	})
}

// OpenFile implements mounts.OpenFileFS. A file it creates gets perm
// exactly (the server creates it with its own mode, changed at once
// through the handle).
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if !mounts.WantsWrite(flag) {
		return f.Open(ctx, name)
	}
	if err := mounts.CheckPath("open", name); err != nil {
		return nil, err
	}
	var h *sftp.File
	var cn *conn
	err := f.do(ctx, "open", name, func(c *conn) error {
		cn = c
		w, a, err := c.resolveStat(name)
		switch {
		case err == nil:
			if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
				return fs.ErrExist
			}
			if a.IsDir() {
				return mounts.ErrIsDir
			}
			if err := typeCheck(a); err != nil {
				return err
			}
			h, err = c.sc.OpenFile(w.abs, flag&^(os.O_CREATE|os.O_EXCL))
			if err != nil && notFound(err) {
				return fs.ErrNotExist // removed since
			}
			return err
		case !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0:
			return err
		}
		// Created here, never through a name that appeared since.
		w, err = c.resolve(name)
		if err != nil {
			return err
		}
		h, err = c.sc.OpenFile(w.abs, flag|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return c.explainCreate(w, err)
		}
		if err := h.Chmod(perm); err != nil {
			h.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &writable{file{f: f.ReadOnlyFS, c: cn, h: h, name: name}}, nil
}
