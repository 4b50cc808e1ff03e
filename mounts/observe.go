package mounts

import (
	"context"
	"io/fs"
	"os"
	"sync/atomic"
	"time"
)

// Observe wraps fsys so that fn learns the names changed by every successful
// mutation made through the wrapper. The names are fsys-relative, io/fs
// style. It is how one face of the workspace tells the other to drop its
// caches: the tool face writes through Observe, the kernel face invalidates
// the names it is given.
//
// What fires, and with which names:
//
//   - OpenFile with O_CREATE or O_TRUNC: the name, once the open succeeded
//     (the file may have been created or emptied; O_CREATE on an existing
//     file reports a name that did not change, which costs a redundant
//     invalidation and misses nothing).
//   - A file opened for writing: the name on Close, and on Sync, when a
//     WriteAt (of at least one byte) or Truncate on it succeeded since the
//     last report. Not after every WriteAt: a file being written is not
//     worth caching anyway, and the tool face writes with one WriteAt and a
//     Close. Close reports even when the close itself fails, because the
//     content has already changed.
//   - Truncate, Mkdir, Unlink, Rmdir, Symlink, Mknod, Chmod, Chown, Chtimes,
//     SetXattr, RemoveXattr: the name.
//   - Rename and Link: both names (a link changes the old name's link
//     count).
//
// Failed calls report nothing. fn may be called from several goroutines at
// once, and while no lock of the wrapper is held. A nil fn returns fsys
// unchanged.
//
// The wrapper declares every capability interface, forwards each call through
// the helpers of this package (so a missing verb fails as it would on fsys),
// and reports fsys's real capabilities, description and per-path
// descriptions.
func Observe(fsys FS, fn func(names ...string)) FS {
	if fn == nil {
		return fsys
	}
	return &observed{fsys: fsys, fn: fn}
}

var (
	_ OpenFileFS         = (*observed)(nil)
	_ TruncateFS         = (*observed)(nil)
	_ MkdirFS            = (*observed)(nil)
	_ RemoveFS           = (*observed)(nil)
	_ RenameFS           = (*observed)(nil)
	_ SymlinkFS          = (*observed)(nil)
	_ MknodFS            = (*observed)(nil)
	_ LinkFS             = (*observed)(nil)
	_ ChmodFS            = (*observed)(nil)
	_ ChownFS            = (*observed)(nil)
	_ ChtimesFS          = (*observed)(nil)
	_ XattrFS            = (*observed)(nil)
	_ SetXattrFS         = (*observed)(nil)
	_ StatFSer           = (*observed)(nil)
	_ SyncFS             = (*observed)(nil)
	_ CapabilityReporter = (*observed)(nil)
	_ Describer          = (*observed)(nil)
	_ PathDescriber      = (*observed)(nil)
	_ WritableFile       = (*observedFile)(nil)
)

type observed struct {
	fsys FS
	fn   func(names ...string)
}

// done reports names when err is nil and returns err.
func (o *observed) done(err error, names ...string) error {
	if err == nil {
		o.fn(names...)
	}
	return err
}

func (o *observed) Capabilities() Capability           { return Capabilities(o.fsys) }
func (o *observed) Describe() Description              { return Describe(o.fsys) }
func (o *observed) DescribeAt(name string) Description { return DescribeAt(o.fsys, name) }

func (o *observed) Stat(ctx context.Context, name string) (Attr, error) {
	return o.fsys.Stat(ctx, name)
}

func (o *observed) ReadDir(ctx context.Context, name string) ([]DirEntry, error) {
	return o.fsys.ReadDir(ctx, name)
}

func (o *observed) Open(ctx context.Context, name string) (File, error) {
	return o.fsys.Open(ctx, name)
}

func (o *observed) ReadLink(ctx context.Context, name string) (string, error) {
	return o.fsys.ReadLink(ctx, name)
}

func (o *observed) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (File, error) {
	f, err := OpenFile(ctx, o.fsys, name, flag, perm)
	if err != nil || !WantsWrite(flag) {
		return f, err
	}
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		o.fn(name)
	}
	if w, ok := f.(WritableFile); ok {
		return &observedFile{WritableFile: w, o: o, name: name}, nil
	}
	return f, nil
}

func (o *observed) Truncate(ctx context.Context, name string, size int64) error {
	return o.done(Truncate(ctx, o.fsys, name, size), name)
}

func (o *observed) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return o.done(Mkdir(ctx, o.fsys, name, perm), name)
}

func (o *observed) Unlink(ctx context.Context, name string) error {
	return o.done(Unlink(ctx, o.fsys, name), name)
}

func (o *observed) Rmdir(ctx context.Context, name string) error {
	return o.done(Rmdir(ctx, o.fsys, name), name)
}

func (o *observed) Rename(ctx context.Context, oldname, newname string, flags RenameFlags) error {
	return o.done(Rename(ctx, o.fsys, oldname, newname, flags), oldname, newname)
}

func (o *observed) Symlink(ctx context.Context, target, name string) error {
	return o.done(Symlink(ctx, o.fsys, target, name), name)
}

func (o *observed) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	return o.done(Mknod(ctx, o.fsys, name, mode, dev), name)
}

func (o *observed) Link(ctx context.Context, oldname, newname string) error {
	return o.done(Link(ctx, o.fsys, oldname, newname), oldname, newname)
}

func (o *observed) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return o.done(Chmod(ctx, o.fsys, name, mode), name)
}

func (o *observed) Chown(ctx context.Context, name string, uid, gid int) error {
	return o.done(Chown(ctx, o.fsys, name, uid, gid), name)
}

func (o *observed) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return o.done(Chtimes(ctx, o.fsys, name, atime, mtime), name)
}

func (o *observed) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	return GetXattr(ctx, o.fsys, name, attr)
}

func (o *observed) ListXattr(ctx context.Context, name string) ([]string, error) {
	return ListXattr(ctx, o.fsys, name)
}

func (o *observed) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	return o.done(SetXattr(ctx, o.fsys, name, attr, data, flags), name)
}

func (o *observed) RemoveXattr(ctx context.Context, name, attr string) error {
	return o.done(RemoveXattr(ctx, o.fsys, name, attr), name)
}

func (o *observed) StatFS(ctx context.Context) (FSStat, error) { return StatFS(ctx, o.fsys) }

func (o *observed) Sync(ctx context.Context, name string) error { return Sync(ctx, o.fsys, name) }

// observedFile reports its name once written, on Sync and Close.
type observedFile struct {
	WritableFile
	o     *observed
	name  string
	dirty atomic.Bool
}

func (f *observedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	if n > 0 {
		f.dirty.Store(true)
	}
	return n, err
}

func (f *observedFile) Truncate(size int64) error {
	err := f.WritableFile.Truncate(size)
	if err == nil {
		f.dirty.Store(true)
	}
	return err
}

// flush reports the name if anything was written since the last report.
func (f *observedFile) flush() {
	if f.dirty.Swap(false) {
		f.o.fn(f.name)
	}
}

func (f *observedFile) Sync() error {
	err := f.WritableFile.Sync()
	f.flush()
	return err
}

func (f *observedFile) Close() error {
	err := f.WritableFile.Close()
	f.flush()
	return err
}
