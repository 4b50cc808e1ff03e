package sftpfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
)

// explainCreate explains the failure of a call that makes w: the name
// exists (EEXIST), its parent is missing or not a directory.
func (c *conn) explainCreate(w where, err error) error {
	if !notFound(err) && !failure(err) {
		return err
	}
	if _, lerr := c.sc.Lstat(w.abs); lerr == nil {
		return fs.ErrExist
	}
	if notFound(err) {
		err = fs.ErrNotExist
	}
	return c.explainParent(w, err)
}

// Truncate implements mounts.TruncateFS.
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	if err := mounts.CheckPath("truncate", name); err != nil {
		return err
	}
	if size < 0 {
		return mounts.PathErr("truncate", name, fs.ErrInvalid)
	}
	return f.do(ctx, "truncate", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		switch {
		case a.IsDir():
			return mounts.ErrIsDir
		case a.Mode.Type() == fs.ModeSymlink:
			return mounts.ErrLoop
		case !a.Mode.IsRegular():
			return fs.ErrInvalid
		}
		return c.sc.Truncate(w.abs, size)
	})
}

// Mkdir implements mounts.MkdirFS. The directory gets perm exactly
// (the server makes it with its own mode, changed at once).
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := mounts.CheckPath("mkdir", name); err != nil {
		return err
	}
	return f.do(ctx, "mkdir", name, func(c *conn) error {
		if name == "." {
			return fs.ErrExist
		}
		w, err := c.resolve(name)
		if err != nil {
			return err
		}
		if err := c.sc.Mkdir(w.abs); err != nil {
			return c.explainCreate(w, err)
		}
		return c.sc.Chmod(w.abs, perm&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	})
}

// Unlink implements mounts.RemoveFS.
func (f *FS) Unlink(ctx context.Context, name string) error {
	if err := mounts.CheckPath("unlink", name); err != nil {
		return err
	}
	return f.do(ctx, "unlink", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if a.IsDir() {
			return mounts.ErrIsDir
		}
		return c.sc.Remove(w.abs)
	})
}

// Rmdir implements mounts.RemoveFS.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	if err := mounts.CheckPath("rmdir", name); err != nil {
		return err
	}
	return f.do(ctx, "rmdir", name, func(c *conn) error {
		if name == "." {
			return mounts.ErrBusy
		}
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if !a.IsDir() {
			return mounts.ErrNotDir
		}
		err = c.sc.RemoveDirectory(w.abs)
		if err != nil && failure(err) {
			if ents, rerr := c.sc.ReadDir(w.abs); rerr == nil && len(ents) > 0 {
				return mounts.ErrNotEmpty
			}
		}
		return err
	})
}

// Rename implements mounts.RenameFS: with no flags through
// posix-rename@openssh.com (rename(2) on the server); RenameNoReplace
// through the protocol's own rename, which never replaces (OpenSSH links
// a file to the new name and unlinks the old one, and renames anything
// else only when the new name does not exist). RenameExchange is
// ENOTSUP.
func (f *FS) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	if err := mounts.CheckPath("rename", oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath("rename", newname); err != nil {
		return err
	}
	if flags&^mounts.RenameNoReplace != 0 {
		return mounts.PathErr("rename", oldname, mounts.ErrNotSupported)
	}
	return f.do(ctx, "rename", oldname, func(c *conn) error {
		if oldname == "." || newname == "." {
			return mounts.ErrBusy
		}
		wo, ao, err := c.resolveStat(oldname)
		if err != nil {
			return err
		}
		if strings.HasPrefix(newname, oldname+"/") {
			return fs.ErrInvalid // into itself
		}
		wn, an, nerr := c.resolveStat(newname)
		switch {
		case nerr == nil:
			if flags&mounts.RenameNoReplace != 0 {
				return at(newname, fs.ErrExist)
			}
			if oldname == newname {
				return nil
			}
			if ao.IsDir() && !an.IsDir() {
				return at(newname, mounts.ErrNotDir)
			}
			if !ao.IsDir() && an.IsDir() {
				return at(newname, mounts.ErrIsDir)
			}
		case errors.Is(nerr, fs.ErrNotExist):
		default:
			return at(newname, nerr)
		}
		if flags&mounts.RenameNoReplace != 0 {
			err = c.sc.Rename(wo.abs, wn.abs)
		} else {
			if !c.posixRename {
				return mounts.ErrNotSupported
			}
			err = c.sc.PosixRename(wo.abs, wn.abs)
		}
		if err == nil {
			return nil
		}
		if !notFound(err) && !failure(err) {
			return err
		}
		if _, lerr := c.sc.Lstat(wo.abs); lerr != nil {
			return fs.ErrNotExist // gone since
		}
		if an, lerr := c.sc.Lstat(wn.abs); lerr == nil {
			if flags&mounts.RenameNoReplace != 0 {
				return at(newname, fs.ErrExist)
			}
			if an.IsDir() && ao.IsDir() {
				return at(newname, mounts.ErrNotEmpty)
			}
		}
		if err := c.explainParent(wn, err); !notFound(err) && !failure(err) {
			return at(newname, err)
		}
		if notFound(err) {
			return at(newname, fs.ErrNotExist)
		}
		return err
	})
}

// Symlink implements mounts.SymlinkFS: the target is stored verbatim.
func (f *FS) Symlink(ctx context.Context, target, name string) error {
	if err := mounts.CheckPath("symlink", name); err != nil {
		return err
	}
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return mounts.PathErr("symlink", name, fs.ErrInvalid)
	}
	return f.do(ctx, "symlink", name, func(c *conn) error {
		if name == "." {
			return fs.ErrExist
		}
		w, err := c.resolve(name)
		if err != nil {
			return err
		}
		if err := c.sc.Symlink(target, w.abs); err != nil {
			return c.explainCreate(w, err)
		}
		return nil
	})
}

// Chmod implements mounts.ChmodFS. A symlink's mode cannot be changed
// (ENOTSUP, as Linux answers), and the server's setstat would follow it.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	if err := mounts.CheckPath("chmod", name); err != nil {
		return err
	}
	return f.do(ctx, "chmod", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if a.Mode.Type() == fs.ModeSymlink {
			return mounts.ErrNotSupported
		}
		return c.sc.Chmod(w.abs, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	})
}

// Sync implements mounts.SyncFS: fsync@openssh.com of a regular file or
// a directory, through a handle of its own; anything else has nothing
// to make durable.
func (f *FS) Sync(ctx context.Context, name string) error {
	if err := mounts.CheckPath("sync", name); err != nil {
		return err
	}
	return f.do(ctx, "sync", name, func(c *conn) error {
		if !c.fsync {
			return mounts.ErrNotSupported
		}
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		if !a.IsDir() && !a.Mode.IsRegular() {
			return nil
		}
		h, err := c.sc.OpenFile(w.abs, os.O_RDONLY)
		if err != nil {
			return err
		}
		defer h.Close()
		return h.Sync()
	})
}

// Chown implements mounts.ChownFS. A -1 keeps that id. The server's
// setstat follows a final symlink, so a symlink's owner is changed by
// chown -h over ssh exec instead.
func (f *FS) Chown(ctx context.Context, name string, uid, gid int) error {
	if err := mounts.CheckPath("chown", name); err != nil {
		return err
	}
	if uid < -1 || gid < -1 {
		return mounts.PathErr("chown", name, fs.ErrInvalid)
	}
	return f.do(ctx, "chown", name, func(c *conn) error {
		w, a, err := c.resolveStat(name)
		if err != nil {
			return err
		}
		u, g := a.Uid, a.Gid
		if uid >= 0 {
			u = uint32(uid)
		}
		if gid >= 0 {
			g = uint32(gid)
		}
		if a.Mode.Type() != fs.ModeSymlink {
			return c.sc.Chown(w.abs, int(u), int(g))
		}
		s, err := c.ssh.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		var errb limitWriter
		errb.b, errb.n = &strings.Builder{}, 4096
		s.Stderr = &errb
		if err := s.Run(fmt.Sprintf("chown -h %d:%d -- %s", u, g, shellQuote(w.abs))); err != nil {
			if strings.Contains(errb.b.String(), "not permitted") {
				return fs.ErrPermission
			}
			return fmt.Errorf("%w (chown -h: %s)", syscall.EIO, strings.TrimSpace(errb.b.String()))
		}
		return nil
	})
}
