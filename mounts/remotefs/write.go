package remotefs

import (
	"context"
	"io/fs"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

var (
	_ mounts.FS          = (*ReadOnlyFS)(nil)
	_ mounts.StatDirFS   = (*ReadOnlyFS)(nil)
	_ mounts.XattrFS     = (*ReadOnlyFS)(nil)
	_ mounts.StatFSer    = (*ReadOnlyFS)(nil)
	_ mounts.Describer   = (*ReadOnlyFS)(nil)
	_ mounts.PageOfferer = (*ReadOnlyFS)(nil)
	_ mounts.SearchFS    = (*ReadOnlyFS)(nil)
	_ mounts.OpenFileFS  = (*FS)(nil)
	_ mounts.TruncateFS  = (*FS)(nil)
	_ mounts.MkdirFS     = (*FS)(nil)
	_ mounts.RemoveFS    = (*FS)(nil)
	_ mounts.RenameFS    = (*FS)(nil)
	_ mounts.SymlinkFS   = (*FS)(nil)
	_ mounts.LinkFS      = (*FS)(nil)
	_ mounts.MknodFS     = (*FS)(nil)
	_ mounts.ChmodFS     = (*FS)(nil)
	_ mounts.ChownFS     = (*FS)(nil)
	_ mounts.ChtimesFS   = (*FS)(nil)
	_ mounts.SetXattrFS  = (*FS)(nil)
	_ mounts.SyncFS      = (*FS)(nil)
)

// change sends a request that changes names, and forgets what is cached
// of them whatever the answer (a failed rename may have half happened on a
// peer that died).
func (f *FS) change(ctx context.Context, req *wire.Request, names ...string) error {
	_, err := f.do(ctx, req)
	for _, n := range names {
		if mounts.ValidPath(n) {
			f.cache.invalidate(n)
		}
	}
	return err
}

// Truncate implements mounts.TruncateFS.
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	return f.change(ctx, &wire.Request{Op: wire.OpTruncate, Name: name, Size: size}, name)
}

// Mkdir implements mounts.MkdirFS.
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if f.postMkdir(ctx, name, perm) {
		return nil
	}
	return f.change(ctx, &wire.Request{Op: wire.OpMkdir, Name: name, Mode: perm}, name)
}

// Unlink implements mounts.RemoveFS.
func (f *FS) Unlink(ctx context.Context, name string) error {
	if f.postUnlink(ctx, name) {
		return nil
	}
	return f.change(ctx, &wire.Request{Op: wire.OpUnlink, Name: name}, name)
}

// Rmdir implements mounts.RemoveFS.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	return f.change(ctx, &wire.Request{Op: wire.OpRmdir, Name: name}, name)
}

// Rename implements mounts.RenameFS.
func (f *FS) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	return f.change(ctx, &wire.Request{Op: wire.OpRename, Name: oldname, Name2: newname, Flag: int(flags)}, oldname, newname)
}

// Symlink implements mounts.SymlinkFS.
func (f *FS) Symlink(ctx context.Context, target, name string) error {
	return f.change(ctx, &wire.Request{Op: wire.OpSymlink, Name: name, Target: target}, name)
}

// Link implements mounts.LinkFS.
func (f *FS) Link(ctx context.Context, oldname, newname string) error {
	return f.change(ctx, &wire.Request{Op: wire.OpLink, Name: oldname, Name2: newname}, oldname, newname)
}

// Mknod implements mounts.MknodFS.
func (f *FS) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	return f.change(ctx, &wire.Request{Op: wire.OpMknod, Name: name, Mode: mode, Dev: dev}, name)
}

// Chmod implements mounts.ChmodFS.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	req := &wire.Request{Op: wire.OpChmod, Name: name, Mode: mode}
	if f.postAttr(ctx, req, func(o *wire.Owner, a mounts.Attr) (mounts.Attr, bool) {
		// The kernel may drop a setgid bit it is asked for; root's
		// outcome is what it asks.
		a.Mode = a.Mode.Type() | mode
		return a, mode&^fs.ModePerm == 0 || o.Uid == 0
	}) {
		return nil
	}
	return f.change(ctx, req, name)
}

// Chown implements mounts.ChownFS.
func (f *FS) Chown(ctx context.Context, name string, uid, gid int) error {
	req := &wire.Request{Op: wire.OpChown, Name: name, Uid: uid, Gid: gid}
	if f.postAttr(ctx, req, func(o *wire.Owner, a mounts.Attr) (mounts.Attr, bool) {
		if a.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			return a, false // which of them the kernel clears depends
		}
		same := (uid < 0 || uint32(uid) == a.Uid) && (gid < 0 || uint32(gid) == a.Gid)
		if uid >= 0 {
			a.Uid = uint32(uid)
		}
		if gid >= 0 {
			a.Gid = uint32(gid)
		}
		return a, o.Uid == 0 || same
	}) {
		return nil
	}
	return f.change(ctx, req, name)
}

// Chtimes implements mounts.ChtimesFS.
func (f *FS) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	req := &wire.Request{Op: wire.OpChtimes, Name: name, Atime: atime, Mtime: mtime}
	if f.postAttr(ctx, req, func(o *wire.Owner, a mounts.Attr) (mounts.Attr, bool) {
		if !atime.IsZero() {
			a.Atime = atime
		}
		if !mtime.IsZero() {
			a.Mtime = mtime
		}
		return a, true // its owner, or root: postAttr checked
	}) {
		return nil
	}
	return f.change(ctx, req, name)
}

// SetXattr implements mounts.SetXattrFS.
func (f *FS) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	f.staled(name)
	return f.change(ctx, &wire.Request{Op: wire.OpSetXattr, Name: name, Xattr: attr, Data: data, Flag: flags}, name)
}

// RemoveXattr implements mounts.SetXattrFS.
func (f *FS) RemoveXattr(ctx context.Context, name, attr string) error {
	f.staled(name)
	return f.change(ctx, &wire.Request{Op: wire.OpRemoveXattr, Name: name, Xattr: attr}, name)
}

// Sync implements mounts.SyncFS: answered once the peer synced. It is
// also the barrier a program has for the changes answered here before the
// peer did (behind.go): it waits for all of them, and a directory's
// reports the first that failed, wherever (as syncfs(2) would; a file's,
// those of its own name).
func (f *FS) Sync(ctx context.Context, name string) error {
	f.barrier()
	_, err := f.do(ctx, &wire.Request{Op: wire.OpSync, Name: name})
	// A file's own errors; a directory's, or when that cannot be told
	// (the link was lost), all of them.
	var derr error
	if a, aerr, ok := f.cache.stat(name); ok && aerr == nil && !a.IsDir() {
		derr = f.takeDeferred(name)
	} else {
		derr = f.takeDeferred(name, true)
	}
	if derr != nil {
		return mounts.PathErr("fsync", name, derr)
	}
	return err
}
