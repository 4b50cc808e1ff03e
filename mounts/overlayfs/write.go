package overlayfs

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// maxSymlinkLen is Linux's PATH_MAX less the terminating NUL.
const maxSymlinkLen = 4095

// maxXattrValue is Linux's XATTR_SIZE_MAX.
const maxXattrValue = 64 << 10

// OpenFile opens name with os.OpenFile semantics. Opening an existing lower
// file for writing (or with O_TRUNC) copies it up first; a new file is
// made in the upper. Read-only opens copy nothing.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	const op = "open"
	if !mounts.WantsWrite(flag) {
		return f.openRead(ctx, name, mounts.OpenOptions{})
	}
	defer f.j.note(false, name)
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.resolve(ctx, name)
	create := flag&os.O_CREATE != 0
	switch {
	case err == nil && create && flag&os.O_EXCL != 0:
		return nil, mounts.PathErr(op, name, fs.ErrExist)
	case err == nil:
	case create && errors.Is(err, fs.ErrNotExist) && name != ".":
		fl, err := f.create(ctx, name, flag, perm)
		return f.journaled(fl, name), perr(op, name, err)
	default:
		return nil, mounts.PathErr(op, name, err)
	}
	if err := openable(e.mode()); err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	if err := f.copyUp(ctx, e, flag&os.O_TRUNC == 0); err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	fl, err := mounts.OpenFile(ctx, f.upper, up(name), flag&^(os.O_CREATE|os.O_EXCL), 0)
	if err != nil {
		return nil, perr(op, name, err)
	}
	return f.journaled(wrap(fl, name, e.um, true), name), nil
}

// journaled makes writes through fl noted in the journal.
func (f *FS) journaled(fl mounts.File, name string) mounts.File {
	if w, ok := fl.(*wfile); ok {
		w.j, w.jname = f.j, name
	}
	return fl
}

// create makes a new regular file and opens it; the caller holds f.mu and
// found no name.
func (f *FS) create(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	parent, overWhiteout, err := f.prepareNew(ctx, name)
	if err != nil {
		return nil, err
	}
	if !overWhiteout {
		fl, err := mounts.OpenFile(ctx, f.upper, up(name), flag, perm)
		if err != nil {
			return nil, err
		}
		return wrap(fl, name, meta{}, true), nil
	}
	tmp := f.tmpName()
	made, err := mounts.OpenFile(ctx, f.upper, tmp, createExcl, perm)
	if err != nil {
		return nil, cause(err)
	}
	if err := made.Close(); err != nil {
		f.discard(ctx, tmp)
		return nil, cause(err)
	}
	if err := f.settleNew(ctx, tmp, parent, perm, false); err != nil {
		f.discard(ctx, tmp)
		return nil, err
	}
	if err := f.replaceWhiteout(ctx, tmp, up(name), false); err != nil {
		f.discard(ctx, tmp)
		return nil, err
	}
	fl, err := mounts.OpenFile(ctx, f.upper, up(name), flag&^(os.O_CREATE|os.O_EXCL|os.O_TRUNC), 0)
	if err != nil {
		return nil, err
	}
	return wrap(fl, name, meta{}, true), nil
}

// prepareNew readies the making of a new entry at name, which the merged
// view does not have: it copies the parent directory up, and reports
// whether a whiteout holds the name in the upper (the new entry must then
// replace it in one step, and a directory must not merge what it hid).
func (f *FS) prepareNew(ctx context.Context, name string) (*ent, bool, error) {
	parent, _, err := f.parentOf(ctx, name)
	if err != nil {
		return nil, false, err
	}
	if err := f.copyUp(ctx, parent, false); err != nil {
		return nil, false, err
	}
	_, err = f.upper.Stat(ctx, up(name))
	switch {
	case err == nil:
		return parent, true, nil
	case isNotExist(err):
		return parent, false, nil
	}
	return nil, false, cause(err)
}

// settleNew gives an entry made in the work directory what it would have
// had if made in its parent: the group (and, for a directory, the setgid
// bit) of a setgid parent, as Linux and the other mounts do. The owner is
// the caller's already, from ctx.
func (f *FS) settleNew(ctx context.Context, tmp string, parent *ent, perm fs.FileMode, dir bool) error {
	pa := parent.ua
	if pa.Mode&fs.ModeSetgid == 0 {
		return nil
	}
	a, err := f.upper.Stat(ctx, tmp)
	if err != nil {
		return cause(err)
	}
	if err := mounts.Chown(ctx, f.upper, tmp, -1, int(pa.Gid)); err != nil {
		return cause(err)
	}
	if a.Mode.Type() == fs.ModeSymlink {
		return nil
	}
	mode := a.Mode & permBits
	if dir {
		mode |= fs.ModeSetgid
	}
	return cause(mounts.Chmod(ctx, f.upper, tmp, mode))
}

// newEntry makes a directory, symlink or special file at a free name with
// mk, which creates it at the upper name it is given.
func (f *FS) newEntry(ctx context.Context, op, name string, dir bool, mk func(upath string) error) error {
	if name == "." {
		return mounts.PathErr(op, name, fs.ErrExist)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, _, err := f.parentOf(ctx, name); err != nil {
		return mounts.PathErr(op, name, err)
	}
	switch _, err := f.resolve(ctx, name); {
	case err == nil:
		return mounts.PathErr(op, name, fs.ErrExist)
	case !errors.Is(err, fs.ErrNotExist):
		return mounts.PathErr(op, name, err)
	}
	parent, overWhiteout, err := f.prepareNew(ctx, name)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	if !overWhiteout {
		return perr(op, name, mk(up(name)))
	}
	tmp := f.tmpName()
	if err := mk(tmp); err != nil {
		return perr(op, name, err)
	}
	err = f.settleNew(ctx, tmp, parent, 0, dir)
	if err == nil && dir {
		// What the whiteout hid stays hidden below the new directory.
		err = f.writeXattrs(ctx, tmp, meta{opaque: true})
	}
	if err == nil {
		err = f.replaceWhiteout(ctx, tmp, up(name), dir)
	}
	if err != nil {
		f.discard(ctx, tmp)
	}
	return perr(op, name, err)
}

// Mkdir creates a directory. Made where a lower directory was removed, it
// is opaque: it starts empty.
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	defer f.j.note(true, name)
	const op = "mkdir"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	return f.newEntry(ctx, op, name, true, func(p string) error {
		return mounts.Mkdir(ctx, f.upper, p, perm)
	})
}

// Symlink creates name pointing at target, stored verbatim.
func (f *FS) Symlink(ctx context.Context, target, name string) error {
	defer f.j.note(false, name)
	const op = "symlink"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if err := f.lacks(mounts.CapSymlink, op, name); err != nil {
		return err
	}
	switch {
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return mounts.PathErr(op, name, fs.ErrInvalid)
	case len(target) > maxSymlinkLen:
		return mounts.PathErr(op, name, mounts.ErrNameTooLong)
	}
	return f.newEntry(ctx, op, name, false, func(p string) error {
		return mounts.Symlink(ctx, f.upper, target, p)
	})
}

// Mknod creates a FIFO, a socket or a device in the upper.
func (f *FS) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	defer f.j.note(false, name)
	const op = "mknod"
	dev, err := mounts.CheckMknod(ctx, name, mode, dev)
	if err != nil {
		return err
	}
	if err := f.lacks(mounts.CapMknod, op, name); err != nil {
		return err
	}
	return f.newEntry(ctx, op, name, false, func(p string) error {
		return mounts.Mknod(ctx, f.upper, p, mode.Type()|mode&permBits, dev)
	})
}

// Link makes newname another name of oldname's file, which is copied up
// first: both names are then one upper file, with one inode number.
func (f *FS) Link(ctx context.Context, oldname, newname string) error {
	defer f.j.note(false, oldname, newname)
	const op = "link"
	if err := mounts.CheckPath(op, oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, newname); err != nil {
		return err
	}
	if err := f.lacks(mounts.CapLink, op, newname); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	src, err := f.resolve(ctx, oldname)
	if err != nil {
		return mounts.PathErr(op, oldname, err)
	}
	// link(2)'s order: both names resolve, the new one is free, and only
	// then does the type of the old one count.
	if newname == "." {
		return mounts.PathErr(op, newname, fs.ErrExist)
	}
	if _, _, err := f.parentOf(ctx, newname); err != nil {
		return mounts.PathErr(op, newname, err)
	}
	switch _, err := f.resolve(ctx, newname); {
	case err == nil:
		return mounts.PathErr(op, newname, fs.ErrExist)
	case !errors.Is(err, fs.ErrNotExist):
		return mounts.PathErr(op, newname, err)
	}
	if src.isDir() {
		return mounts.PathErr(op, oldname, fs.ErrPermission)
	}
	if err := f.copyUp(ctx, src, true); err != nil {
		return mounts.PathErr(op, oldname, err)
	}
	_, overWhiteout, err := f.prepareNew(ctx, newname)
	if err != nil {
		return mounts.PathErr(op, newname, err)
	}
	if !overWhiteout {
		return perr(op, newname, mounts.Link(ctx, f.upper, up(oldname), up(newname)))
	}
	tmp := f.tmpName()
	if err := mounts.Link(ctx, f.upper, up(oldname), tmp); err != nil {
		return perr(op, newname, err)
	}
	if err := f.replaceWhiteout(ctx, tmp, up(newname), false); err != nil {
		f.discard(ctx, tmp)
		return mounts.PathErr(op, newname, err)
	}
	return nil
}

// Unlink removes a non-directory. A name the lower has is replaced by a
// whiteout; one only the upper has is removed there.
func (f *FS) Unlink(ctx context.Context, name string) error {
	return f.remove(ctx, "unlink", name, false)
}

// Rmdir removes an empty directory, by the same rules as Unlink. A
// directory is empty when its merged listing is.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	return f.remove(ctx, "rmdir", name, true)
}

func (f *FS) remove(ctx context.Context, op, name string, wantDir bool) error {
	defer f.j.note(wantDir, name)
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if name == "." {
		return mounts.PathErr(op, name, mounts.ErrBusy)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parent, base, err := f.parentOf(ctx, name)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	e, err := f.resolve(ctx, name)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	switch {
	case wantDir && !e.isDir():
		return mounts.PathErr(op, name, mounts.ErrNotDir)
	case !wantDir && e.isDir():
		return mounts.PathErr(op, name, mounts.ErrIsDir)
	case wantDir:
		ents, err := f.list(ctx, e)
		if err != nil {
			return perr(op, name, err)
		}
		if len(ents) > 0 {
			return mounts.PathErr(op, name, mounts.ErrNotEmpty)
		}
	}
	needWhiteout, err := f.lowerHas(ctx, parent, base)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	return perr(op, name, f.drop(ctx, parent, e, needWhiteout))
}

// drop takes e's name away: a whiteout where the lower has the name, and
// nothing left in the upper otherwise.
func (f *FS) drop(ctx context.Context, parent, e *ent, needWhiteout bool) error {
	switch {
	case !e.upper:
		if err := f.copyUp(ctx, parent, false); err != nil {
			return err
		}
		return f.putWhiteout(ctx, up(e.name))
	case !e.isDir() && needWhiteout:
		if err := f.putWhiteout(ctx, up(e.name)); err != nil {
			return err
		}
	case !e.isDir():
		if err := mounts.Unlink(ctx, f.upper, up(e.name)); err != nil {
			return cause(err)
		}
	case needWhiteout:
		// The directory (with the whiteouts it may hold) and a new
		// whiteout trade places in one step; the directory is then
		// dropped from the work directory.
		tmp, err := f.makeWhiteout(ctx)
		if err != nil {
			f.discard(ctx, tmp)
			return cause(err)
		}
		ok, err := f.exchange(ctx, tmp, up(e.name))
		if err != nil {
			f.discard(ctx, tmp)
			return err
		}
		if !ok {
			if err := f.emptyUpperDir(ctx, e); err != nil {
				return err
			}
			if err := mounts.Rmdir(ctx, f.upper, up(e.name)); err != nil {
				return cause(err)
			}
			return cause(mounts.Rename(ctx, f.upper, tmp, up(e.name), 0))
		}
		f.discard(ctx, tmp)
		return nil
	default:
		if err := f.emptyUpperDir(ctx, e); err != nil {
			return err
		}
		return cause(mounts.Rmdir(ctx, f.upper, up(e.name)))
	}
	f.forget(ctx, e.ua)
	return nil
}

// emptyUpperDir removes the whiteouts of upper directory e, which is empty
// to callers, making it opaque first so that no step shows what they hid.
func (f *FS) emptyUpperDir(ctx context.Context, e *ent) error {
	if e.hasLower && !e.um.opaque {
		if err := f.writeXattrs(ctx, up(e.name), meta{opaque: true}); err != nil {
			return cause(err)
		}
		e.um.opaque = true
	}
	return f.clearDir(ctx, up(e.name))
}

// same reports whether two resolved names are one file.
func same(a, b *ent) bool {
	switch {
	case a.name == b.name:
		return true
	case a.upper != b.upper:
		return false
	case a.upper:
		return a.ua.Ino == b.ua.Ino
	}
	return a.la.Ino != 0 && a.la.Ino == b.la.Ino
}

// Rename moves oldname to newname atomically for every caller of the
// overlay, with rename(2) and renameat2(2) rules, files and directories
// alike, lower ones included: a directory is copied up empty and records
// where its lower contents are (see "# Renames" in the package doc).
func (f *FS) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	defer f.j.note(true, oldname, newname)
	const op = "rename"
	if err := mounts.CheckPath(op, oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, newname); err != nil {
		return err
	}
	if flags&^(mounts.RenameNoReplace|mounts.RenameExchange) != 0 ||
		flags == mounts.RenameNoReplace|mounts.RenameExchange {
		return mounts.PathErr(op, oldname, fs.ErrInvalid)
	}
	if oldname == "." {
		return mounts.PathErr(op, oldname, mounts.ErrBusy)
	}
	if newname == "." {
		return mounts.PathErr(op, newname, mounts.ErrBusy)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	opar, obase, err := f.parentOf(ctx, oldname)
	if err != nil {
		return mounts.PathErr(op, oldname, err)
	}
	npar, nbase, err := f.parentOf(ctx, newname)
	if err != nil {
		return mounts.PathErr(op, newname, err)
	}
	// Both parents resolve before either name is looked at, and the
	// checks follow renameat2(2)'s order, as the memory mount's do.
	src, err := f.resolve(ctx, oldname)
	if err != nil {
		return mounts.PathErr(op, oldname, err)
	}
	dst, err := f.resolve(ctx, newname)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dst = nil
	case err != nil:
		return mounts.PathErr(op, newname, err)
	}
	if flags&mounts.RenameExchange != 0 {
		switch {
		case dst == nil:
			return mounts.PathErr(op, newname, fs.ErrNotExist)
		case same(src, dst):
			return nil
		case within(newname, oldname) || within(oldname, newname):
			return mounts.PathErr(op, oldname, fs.ErrInvalid)
		}
		return perr(op, newname, f.swap(ctx, src, opar, obase, dst, npar, nbase))
	}
	switch {
	case dst != nil && flags&mounts.RenameNoReplace != 0:
		return mounts.PathErr(op, newname, fs.ErrExist)
	case src.isDir() && within(newname, oldname):
		return mounts.PathErr(op, oldname, fs.ErrInvalid)
	case within(oldname, newname):
		return mounts.PathErr(op, newname, mounts.ErrNotEmpty)
	case dst != nil && same(src, dst):
		return nil
	case dst != nil && src.isDir() && !dst.isDir():
		return mounts.PathErr(op, newname, mounts.ErrNotDir)
	case dst != nil && !src.isDir() && dst.isDir():
		return mounts.PathErr(op, newname, mounts.ErrIsDir)
	case dst != nil && dst.isDir():
		ents, err := f.list(ctx, dst)
		if err != nil {
			return perr(op, newname, err)
		}
		if len(ents) > 0 {
			return mounts.PathErr(op, newname, mounts.ErrNotEmpty)
		}
	}
	return perr(op, newname, f.move(ctx, src, opar, obase, dst, npar, nbase))
}

// pinLower readies directory e (copied up) to move to a name whose lower
// entry, if any, is not its own: a directory with a lower directory
// records where it is (a redirect), one without is made opaque if the new
// name has a lower entry it must not merge. Neither changes what e shows.
func (f *FS) pinLower(ctx context.Context, e *ent, newLower bool) error {
	switch {
	case !e.isDir():
		return nil
	case e.hasLower && !e.um.hasRedirect:
		e.um.redirect, e.um.hasRedirect = e.lower, true
		return f.writeXattrs(ctx, up(e.name), meta{redirect: e.lower, hasRedirect: true})
	case !e.hasLower && newLower && !e.um.opaque:
		e.um.opaque = true
		return f.writeXattrs(ctx, up(e.name), meta{opaque: true})
	}
	return nil
}

// move carries out a plain rename whose checks passed.
func (f *FS) move(ctx context.Context, src, opar *ent, obase string, dst, npar *ent, nbase string) error {
	if err := f.copyUp(ctx, src, true); err != nil {
		return err
	}
	if err := f.copyUp(ctx, npar, false); err != nil {
		return err
	}
	needWhiteout, err := f.lowerHas(ctx, opar, obase)
	if err != nil {
		return err
	}
	newLower, err := f.lowerHas(ctx, npar, nbase)
	if err != nil {
		return err
	}
	if err := f.pinLower(ctx, src, newLower); err != nil {
		return cause(err)
	}
	uo, un := up(src.name), up(mounts.Join(npar.name, nbase))
	if dst != nil && dst.upper && dst.isDir() {
		// The directory to replace is empty to callers but may hold
		// whiteouts; opaque, it shows the same, and can lose them.
		if !dst.um.opaque {
			if err := f.writeXattrs(ctx, un, meta{opaque: true}); err != nil {
				return cause(err)
			}
		}
		if err := f.clearDir(ctx, un); err != nil {
			return err
		}
	}
	_, err = f.upper.Stat(ctx, un)
	held := err == nil // a whiteout, or the upper entry dst
	if err != nil && !isNotExist(err) {
		return cause(err)
	}
	srcDir := src.isDir()
	switch {
	case needWhiteout && dst == nil:
		// Nothing shows at the new name: put a whiteout there and swap
		// it with the source, in one step.
		if !held {
			if err := f.putWhiteout(ctx, un); err != nil {
				return err
			}
		}
		ok, err := f.exchange(ctx, uo, un)
		if err != nil {
			return err
		}
		if !ok {
			if err := mounts.Unlink(ctx, f.upper, un); err != nil {
				return cause(err)
			}
			if err := mounts.Rename(ctx, f.upper, uo, un, 0); err != nil {
				return cause(err)
			}
			return f.putWhiteout(ctx, uo)
		}
	case needWhiteout:
		// The new name shows something the source replaces: move, then
		// hide the lower entry of the old name. In between a crash
		// shows both names, never neither.
		if err := mounts.Rename(ctx, f.upper, uo, un, 0); err != nil {
			return cause(err)
		}
		if err := f.putWhiteout(ctx, uo); err != nil {
			return err
		}
	case held && dst == nil && srcDir:
		// A directory cannot replace the whiteout (a file) at the new
		// name: swap them and drop the whiteout, which hides nothing
		// at the old name.
		ok, err := f.exchange(ctx, uo, un)
		if err != nil {
			return err
		}
		if !ok {
			if err := mounts.Unlink(ctx, f.upper, un); err != nil {
				return cause(err)
			}
			return cause(mounts.Rename(ctx, f.upper, uo, un, 0))
		}
		return cause(mounts.Unlink(ctx, f.upper, uo))
	default:
		if err := mounts.Rename(ctx, f.upper, uo, un, 0); err != nil {
			return cause(err)
		}
	}
	if dst != nil && dst.upper && !dst.isDir() {
		f.forget(ctx, dst.ua)
	}
	return nil
}

// swap carries out RenameExchange: both names exist and trade places; no
// whiteout is needed, as both names still show something.
func (f *FS) swap(ctx context.Context, src, opar *ent, obase string, dst, npar *ent, nbase string) error {
	if err := f.copyUp(ctx, src, true); err != nil {
		return err
	}
	if err := f.copyUp(ctx, dst, true); err != nil {
		return err
	}
	oldLower, err := f.lowerHas(ctx, opar, obase)
	if err != nil {
		return err
	}
	newLower, err := f.lowerHas(ctx, npar, nbase)
	if err != nil {
		return err
	}
	if err := f.pinLower(ctx, src, newLower); err != nil {
		return cause(err)
	}
	if err := f.pinLower(ctx, dst, oldLower); err != nil {
		return cause(err)
	}
	ok, err := f.exchange(ctx, up(src.name), up(dst.name))
	if err != nil {
		return err
	}
	if !ok {
		return mounts.ErrNotSupported
	}
	return nil
}

// setattr copies name up and runs change on its upper copy; pre checks the
// merged entry first, so a call refused for its arguments copies nothing.
func (f *FS) setattr(ctx context.Context, op, name string, pre func(e *ent) error, change func(upath string) error) error {
	defer f.j.note(false, name)
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.resolve(ctx, name)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	if pre != nil {
		if err := pre(e); err != nil {
			return mounts.PathErr(op, name, err)
		}
	}
	if err := f.copyUp(ctx, e, true); err != nil {
		return mounts.PathErr(op, name, err)
	}
	return perr(op, name, change(up(name)))
}

// Chmod sets the permission bits (and setuid, setgid, sticky). A symlink
// has none of its own: mounts.ErrNotSupported, as lchmod on Linux.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return f.setattr(ctx, "chmod", name, func(e *ent) error {
		if e.mode().Type() == fs.ModeSymlink {
			return mounts.ErrNotSupported
		}
		return nil
	}, func(p string) error { return mounts.Chmod(ctx, f.upper, p, mode) })
}

// Chown sets the owners, without following a symlink; -1 leaves an id.
func (f *FS) Chown(ctx context.Context, name string, uid, gid int) error {
	return f.setattr(ctx, "chown", name, func(*ent) error {
		valid := func(id int) bool { return id >= -1 && id <= math.MaxUint32 }
		if !valid(uid) || !valid(gid) {
			return fs.ErrInvalid
		}
		return nil
	}, func(p string) error { return mounts.Chown(ctx, f.upper, p, uid, gid) })
}

// Chtimes sets access and modification times; a zero time is unchanged.
func (f *FS) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return f.setattr(ctx, "chtimes", name, nil, func(p string) error {
		return mounts.Chtimes(ctx, f.upper, p, atime, mtime)
	})
}

// Truncate sets the size of a regular file, copying it up first (without
// its content when the new size is 0).
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	defer f.j.note(false, name)
	const op = "truncate"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.resolve(ctx, name)
	if err != nil {
		return mounts.PathErr(op, name, err)
	}
	switch m := e.mode(); {
	case m.IsDir():
		return mounts.PathErr(op, name, mounts.ErrIsDir)
	case m.Type() == fs.ModeSymlink:
		return mounts.PathErr(op, name, mounts.ErrLoop)
	case !m.IsRegular():
		// truncate(2) of anything but a regular file is EINVAL.
		return mounts.PathErr(op, name, fs.ErrInvalid)
	case size < 0:
		return mounts.PathErr(op, name, fs.ErrInvalid)
	}
	if err := f.copyUp(ctx, e, size != 0); err != nil {
		return mounts.PathErr(op, name, err)
	}
	return perr(op, name, mounts.Truncate(ctx, f.upper, up(name), size))
}

// SetXattr writes a user.* attribute of a file or directory, copying it up.
// The overlay's own attributes are refused with fs.ErrPermission.
func (f *FS) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	return f.setattr(ctx, "setxattr", name, func(e *ent) error {
		switch err := checkXattr(attr); {
		case err != nil:
			return err
		case reserved(attr):
			return fs.ErrPermission
		case flags&^(mounts.XattrCreate|mounts.XattrReplace) != 0:
			return fs.ErrInvalid
		case len(data) > maxXattrValue:
			return syscall.E2BIG
		case !takesXattrs(e.mode()):
			return fs.ErrPermission
		}
		if flags == 0 {
			return nil
		}
		_, err := f.entXattr(ctx, e, attr)
		switch {
		case err == nil && flags&mounts.XattrCreate != 0:
			return fs.ErrExist
		case errors.Is(err, mounts.ErrNoAttr) && flags&mounts.XattrReplace != 0:
			return mounts.ErrNoAttr
		case err != nil && !errors.Is(err, mounts.ErrNoAttr):
			return err
		}
		return nil
	}, func(p string) error { return mounts.SetXattr(ctx, f.upper, p, attr, data, flags) })
}

// RemoveXattr deletes an attribute, copying the entry up.
func (f *FS) RemoveXattr(ctx context.Context, name, attr string) error {
	return f.setattr(ctx, "removexattr", name, func(e *ent) error {
		switch err := checkXattr(attr); {
		case err != nil:
			return err
		case reserved(attr):
			return fs.ErrPermission
		case !takesXattrs(e.mode()):
			return fs.ErrPermission
		}
		_, err := f.entXattr(ctx, e, attr)
		return err
	}, func(p string) error { return mounts.RemoveXattr(ctx, f.upper, p, attr) })
}

// entXattr reads attr of a resolved entry, from the layer that shows it.
func (f *FS) entXattr(ctx context.Context, e *ent, attr string) ([]byte, error) {
	var v []byte
	var err error
	if e.upper {
		v, err = mounts.GetXattr(ctx, f.upper, up(e.name), attr)
	} else {
		v, err = mounts.GetXattr(ctx, f.lower, e.lower, attr)
		if errors.Is(err, mounts.ErrNotSupported) {
			// A lower without attributes has none of this one.
			err = mounts.ErrNoAttr
		}
	}
	return v, cause(err)
}
