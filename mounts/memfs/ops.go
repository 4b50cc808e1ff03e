package memfs

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// maxSymlinkLen is Linux's PATH_MAX less the terminating NUL.
const maxSymlinkLen = 4095

// OpenFile opens name with os.OpenFile semantics. The file returned
// implements mounts.WritableFile when flag asks for O_WRONLY or O_RDWR.
// Permission bits are not checked: the kernel face (default_permissions)
// and the policy layer decide who may do what.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	const op = "open"
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	create := flag&os.O_CREATE != 0
	// Only creating a name changes the tree; everything else runs beside
	// other readers.
	if create {
		f.mu.Lock()
		defer f.mu.Unlock()
	} else {
		f.mu.RLock()
		defer f.mu.RUnlock()
	}
	var j *journal
	n, err := f.walk(name)
	switch {
	case err == nil && create && flag&os.O_EXCL != 0:
		return nil, pathErr(op, name, fs.ErrExist)
	case err == nil:
	case create && errors.Is(err, fs.ErrNotExist):
		dir, base, err := f.walkParent(name)
		if err != nil {
			return nil, pathErr(op, name, err)
		}
		j = f.journal("create")
		if n, err = f.create(ctx, j, dir, base, 0, perm, "", 0); err != nil {
			return nil, pathErr(op, name, err)
		}
		// A new file is empty: O_TRUNC has nothing to do.
		flag &^= os.O_TRUNC
	default:
		return nil, pathErr(op, name, err)
	}
	switch {
	case n.isDir():
		return nil, pathErr(op, name, mounts.ErrIsDir)
	case n.isSymlink():
		return nil, pathErr(op, name, mounts.ErrLoop)
	case n.isSpecial():
		return nil, pathErr(op, name, mounts.ErrSpecial)
	}
	if err := f.load(ctx, n); err != nil {
		return nil, pathErr(op, name, err)
	}
	if flag&os.O_TRUNC != 0 {
		// Linux truncates even when the access mode is O_RDONLY.
		if err := f.truncate(n, name, 0); err != nil {
			return nil, err
		}
	}
	if err := f.commit(j, name); err != nil {
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	h := &handle{f: f, name: name, readable: acc != os.O_WRONLY}
	h.n.Store(n)
	n.mu.Lock()
	n.opens++
	if n.handles == nil {
		n.handles = map[*handle]struct{}{}
	}
	n.handles[h] = struct{}{}
	n.mu.Unlock()
	if acc == os.O_RDONLY {
		return h, nil
	}
	return &writable{handle: h, append: flag&os.O_APPEND != 0}, nil
}

// Truncate sets the size of a regular file by name. Growing adds a hole,
// which costs no memory.
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	const op = "truncate"
	n, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	defer f.mu.RUnlock()
	switch {
	case n.isDir():
		return pathErr(op, name, mounts.ErrIsDir)
	case n.isSymlink():
		return pathErr(op, name, mounts.ErrLoop)
	case n.isSpecial():
		// truncate(2) of anything but a regular file is EINVAL.
		return pathErr(op, name, fs.ErrInvalid)
	}
	if err := f.load(ctx, n); err != nil {
		return pathErr(op, name, err)
	}
	return f.truncate(n, name, size)
}

// truncate sets a regular file's size. Like Linux, it stamps mtime and ctime
// even when the size does not change.
func (f *FS) truncate(n *node, name string, size int64) error {
	const op = "truncate"
	if size < 0 {
		return pathErr(op, name, fs.ErrInvalid)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// Shrinking frees bytes and growing allocates none, so the quota
	// never refuses a truncate.
	f.usedBytes.Add(n.data.truncate(size))
	n.changed(f.now(), true)
	j := f.journal(op)
	if n.ghost {
		j = nil // the store knows nothing of a restore's copy
	}
	j.inode(n)
	return f.commit(j, name)
}

// Mkdir creates a directory. In a setgid directory it inherits the group
// and the setgid bit.
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return f.mknod(ctx, "mkdir", name, fs.ModeDir, perm, "", 0)
}

// Symlink creates name pointing at target, stored verbatim and never
// followed by memfs.
func (f *FS) Symlink(ctx context.Context, target, name string) error {
	const op = "symlink"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	switch {
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return pathErr(op, name, fs.ErrInvalid)
	case len(target) > maxSymlinkLen:
		return pathErr(op, name, mounts.ErrNameTooLong)
	}
	return f.mknod(ctx, op, name, fs.ModeSymlink, fs.ModePerm, target, 0)
}

// Mknod creates a FIFO, a socket or a device: a node of attributes only,
// since what it stands for lives in the kernel. A device needs a caller
// that may create one (mounts.MayCreateDevice).
func (f *FS) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	dev, err := mounts.CheckMknod(ctx, name, mode, dev)
	if err != nil {
		return err
	}
	return f.mknod(ctx, "mknod", name, mode.Type(), mode&permBits, "", dev)
}

// mknod creates a directory, a symlink or a special file at a free name.
func (f *FS) mknod(ctx context.Context, op, name string, typ, perm fs.FileMode, target string, rdev uint32) error {
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if name == "." {
		return pathErr(op, name, fs.ErrExist)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	dir, base, err := f.walkParent(name)
	if err != nil {
		return pathErr(op, name, err)
	}
	if _, ok := dir.children[base]; ok {
		return pathErr(op, name, fs.ErrExist)
	}
	j := f.journal(op)
	if _, err := f.create(ctx, j, dir, base, typ, perm, target, rdev); err != nil {
		return pathErr(op, name, err)
	}
	return f.commit(j, name)
}

// Link makes newname another name of the file oldname. Directories cannot
// be linked (fs.ErrPermission, as EPERM from link(2)); a symlink can, and
// the link is to the symlink itself.
func (f *FS) Link(ctx context.Context, oldname, newname string) error {
	const op = "link"
	if err := mounts.CheckPath(op, oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, newname); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	src, err := f.walk(oldname)
	if err != nil {
		return pathErr(op, oldname, err)
	}
	// The checks come in link(2)'s order: both names resolve, the new
	// one is free, and only then does the type of the old one count.
	if newname == "." {
		return pathErr(op, newname, fs.ErrExist)
	}
	dir, base, err := f.walkParent(newname)
	if err != nil {
		return pathErr(op, newname, err)
	}
	if _, ok := dir.children[base]; ok {
		return pathErr(op, newname, fs.ErrExist)
	}
	if src.isDir() {
		return pathErr(op, oldname, fs.ErrPermission)
	}
	now := f.now()
	j := f.journal(op)
	dir.children[base] = src
	j.entry(dir, base, src)
	f.touch(j, dir, 0, now, true)
	src.mu.Lock()
	src.nlink++
	src.changed(now, false)
	j.inode(src)
	src.mu.Unlock()
	f.noteName(oldname)
	return f.commit(j, newname)
}

// touch stamps a node changed, adjusting its link count by delta; the
// caller holds f.mu exclusively, so the link counts of directories cannot
// move under it.
func (f *FS) touch(j *journal, n *node, delta int, now time.Time, content bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nlink = uint32(int(n.nlink) + delta)
	n.changed(now, content)
	j.inode(n)
}

// drop takes one name away from n, freeing it when no name and no handle is
// left; the caller holds f.mu exclusively and removed the entry. A
// directory loses its "." link with its name.
func (f *FS) drop(j *journal, n *node, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isDir() {
		n.nlink = 0
	} else {
		n.nlink--
	}
	n.changed(now, false)
	j.inode(n)
	if n.nlink == 0 && f.index != nil {
		delete(f.index, n.ino)
	}
	f.release(j, n)
}

// Unlink removes a non-directory. An open file keeps its content until
// its last handle closes.
func (f *FS) Unlink(ctx context.Context, name string) error {
	return f.remove(ctx, "unlink", name, false)
}

// Rmdir removes an empty directory.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	return f.remove(ctx, "rmdir", name, true)
}

func (f *FS) remove(ctx context.Context, op, name string, wantDir bool) error {
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if name == "." {
		return pathErr(op, name, mounts.ErrBusy)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	dir, base, err := f.walkParent(name)
	if err != nil {
		return pathErr(op, name, err)
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		return pathErr(op, name, fs.ErrNotExist)
	case wantDir && !n.isDir():
		return pathErr(op, name, mounts.ErrNotDir)
	case !wantDir && n.isDir():
		return pathErr(op, name, mounts.ErrIsDir)
	case wantDir && len(n.children) > 0:
		return pathErr(op, name, mounts.ErrNotEmpty)
	}
	now := f.now()
	j := f.journal(op)
	delete(dir.children, base)
	j.entry(dir, base, nil)
	delta := 0
	if n.isDir() {
		delta = -1
	}
	f.touch(j, dir, delta, now, true)
	f.drop(j, n, now)
	return f.commit(j, name)
}

// within reports whether name lies strictly below dir. Without symlink
// resolution and without hard-linked directories, a directory has exactly
// one name, so the lexical test is exact.
func within(name, dir string) bool {
	return dir == "." || strings.HasPrefix(name, dir+"/")
}

// Rename moves oldname to newname atomically, as rename(2) and renameat2(2):
// a file replaces a file, a directory an empty directory; with
// RenameNoReplace an existing newname fails with fs.ErrExist; with
// RenameExchange both names must exist and trade places. Moving a
// directory below itself fails with fs.ErrInvalid. Renaming a name onto
// another name of the same file does nothing, as POSIX says.
func (f *FS) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	const op = "rename"
	if err := mounts.CheckPath(op, oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, newname); err != nil {
		return err
	}
	if flags&^(mounts.RenameNoReplace|mounts.RenameExchange) != 0 ||
		flags == mounts.RenameNoReplace|mounts.RenameExchange {
		return pathErr(op, oldname, fs.ErrInvalid)
	}
	if oldname == "." {
		return pathErr(op, oldname, mounts.ErrBusy)
	}
	if newname == "." {
		return pathErr(op, newname, mounts.ErrBusy)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	odir, obase, err := f.walkParent(oldname)
	if err != nil {
		return pathErr(op, oldname, err)
	}
	ndir, nbase, err := f.walkParent(newname)
	if err != nil {
		return pathErr(op, newname, err)
	}
	// Both parents resolve before either name is looked at, and the
	// checks below follow renameat2(2)'s order, so the errno for a call
	// with several faults is the kernel's.
	src, ok := odir.children[obase]
	if !ok {
		return pathErr(op, oldname, fs.ErrNotExist)
	}
	dst := ndir.children[nbase]
	if flags&mounts.RenameExchange != 0 {
		return f.exchange(odir, obase, src, ndir, nbase, dst, oldname, newname)
	}
	switch {
	case dst != nil && flags&mounts.RenameNoReplace != 0:
		return pathErr(op, newname, fs.ErrExist)
	case src.isDir() && within(newname, oldname):
		return pathErr(op, oldname, fs.ErrInvalid)
	case within(oldname, newname):
		// newname is an ancestor of oldname, so a non-empty
		// directory; Linux says so before it looks at types.
		return pathErr(op, newname, mounts.ErrNotEmpty)
	case dst == src:
		return nil
	case dst != nil && src.isDir() && !dst.isDir():
		return pathErr(op, newname, mounts.ErrNotDir)
	case dst != nil && !src.isDir() && dst.isDir():
		return pathErr(op, newname, mounts.ErrIsDir)
	case dst != nil && len(dst.children) > 0:
		return pathErr(op, newname, mounts.ErrNotEmpty)
	}
	now := f.now()
	j := f.journal(op)
	// Link counts of the parents: a directory's ".." links its parent.
	odelta, ndelta := 0, 0
	if dst != nil {
		if dst.isDir() {
			ndelta--
		}
		f.drop(j, dst, now)
	}
	delete(odir.children, obase)
	j.entry(odir, obase, nil)
	ndir.children[nbase] = src
	j.entry(ndir, nbase, src)
	if src.isDir() {
		odelta--
		ndelta++
	}
	if odir == ndir {
		f.touch(j, odir, odelta+ndelta, now, true)
	} else {
		f.touch(j, odir, odelta, now, true)
		f.touch(j, ndir, ndelta, now, true)
	}
	f.touch(j, src, 0, now, false)
	f.noteName(oldname)
	return f.commit(j, newname)
}

// exchange swaps two existing names for RenameExchange; the caller holds
// f.mu exclusively.
func (f *FS) exchange(odir *node, obase string, src, ndir *node, nbase string, dst *node, oldname, newname string) error {
	const op = "rename"
	switch {
	case dst == nil:
		return pathErr(op, newname, fs.ErrNotExist)
	case src == dst:
		return nil
	case within(newname, oldname) || within(oldname, newname):
		// One is an ancestor of the other: the swap would detach a
		// subtree from the root.
		return pathErr(op, oldname, fs.ErrInvalid)
	}
	now := f.now()
	j := f.journal(op)
	odir.children[obase] = dst
	j.entry(odir, obase, dst)
	ndir.children[nbase] = src
	j.entry(ndir, nbase, src)
	odelta := 0
	if odir != ndir {
		// A directory moving across takes its ".." link with it.
		if src.isDir() {
			odelta--
		}
		if dst.isDir() {
			odelta++
		}
	}
	if odir == ndir {
		f.touch(j, odir, 0, now, true)
	} else {
		f.touch(j, odir, odelta, now, true)
		f.touch(j, ndir, -odelta, now, true)
	}
	f.touch(j, src, 0, now, false)
	f.touch(j, dst, 0, now, false)
	f.noteName(oldname)
	return f.commit(j, newname)
}

// Chmod sets the permission, setuid, setgid and sticky bits. A symlink has
// no mode of its own: like lchmod on Linux, that is mounts.ErrNotSupported.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return f.setattr("chmod", name, func(n *node) error {
		if n.isSymlink() {
			return mounts.ErrNotSupported
		}
		n.perm = mode & permBits
		return nil
	})
}

// Chown sets the owners; -1 leaves an id unchanged. It does not follow a
// symlink. As chown(2) on Linux, even by root and even with both ids -1,
// it clears the setuid bit of a regular file, and its setgid bit when group
// execute is on (setgid without it marks mandatory locking, not a
// privilege); a directory keeps both. The kernel face sends the cleared
// mode along with a chown anyway; this is for the tool face.
func (f *FS) Chown(ctx context.Context, name string, uid, gid int) error {
	valid := func(id int) bool { return id >= -1 && id <= math.MaxUint32 }
	if !valid(uid) || !valid(gid) {
		if err := mounts.CheckPath("chown", name); err != nil {
			return err
		}
		return pathErr("chown", name, fs.ErrInvalid)
	}
	return f.setattr("chown", name, func(n *node) error {
		if uid != -1 {
			n.uid = uint32(uid)
		}
		if gid != -1 {
			n.gid = uint32(gid)
		}
		if !n.isDir() {
			n.perm &^= fs.ModeSetuid
			if n.perm&0o010 != 0 {
				n.perm &^= fs.ModeSetgid
			}
		}
		return nil
	})
}

// Chtimes sets the access and modification times; a zero time leaves that
// one unchanged. ctime becomes now, as utimensat(2) does.
func (f *FS) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return f.setattr("chtimes", name, func(n *node) error {
		if !atime.IsZero() {
			n.atime = atime
		}
		if !mtime.IsZero() {
			n.mtime = mtime
		}
		return nil
	})
}

// setattr runs change on name's node under its lock, then stamps ctime.
func (f *FS) setattr(op, name string, change func(*node) error) error {
	n, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	defer f.mu.RUnlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := change(n); err != nil {
		return pathErr(op, name, err)
	}
	n.changed(f.now(), false)
	j := f.journal(op)
	j.inode(n)
	return f.commit(j, name)
}
