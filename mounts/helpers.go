package mounts

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// missing returns the error for a verb fsys lacks: ErrReadOnly when the
// mount cannot change anything, ErrNotSupported when it is writable but not
// in this way.
func missing(fsys FS, op, name string) error {
	if err := CheckPath(op, name); err != nil {
		return err
	}
	if Writable(fsys) {
		return PathErr(op, name, ErrNotSupported)
	}
	return PathErr(op, name, ErrReadOnly)
}

// Access modes and flags of OpenFile.
const accmode = os.O_RDONLY | os.O_WRONLY | os.O_RDWR

// WantsWrite reports whether an open flag asks for any change.
func WantsWrite(flag int) bool {
	return flag&accmode != os.O_RDONLY || flag&(os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
}

// OpenFile opens name with os.OpenFile flag semantics. Read-only flags go to
// Open on any mount; anything else needs OpenFileFS.
func OpenFile(ctx context.Context, fsys FS, name string, flag int, perm fs.FileMode) (File, error) {
	if !WantsWrite(flag) {
		return fsys.Open(ctx, name)
	}
	if w, ok := fsys.(OpenFileFS); ok {
		return w.OpenFile(ctx, name, flag, perm)
	}
	return nil, missing(fsys, "open", name)
}

// OpenWith opens name for reading, as fsys.Open does, with the options o:
// through OpenWith on a mount that implements [OpenWithFS], through Open,
// without them, on any other (they are hints).
func OpenWith(ctx context.Context, fsys FS, name string, o OpenOptions) (File, error) {
	if w, ok := fsys.(OpenWithFS); ok {
		return w.OpenWith(ctx, name, o)
	}
	return fsys.Open(ctx, name)
}

// ReadFile reads a whole regular file.
func ReadFile(ctx context.Context, fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// The size only sizes the first allocation, within reason: a sparse
	// file may claim an exabyte, and a mount may report 0 for content it
	// has not decoded yet.
	buf := make([]byte, 0, min(max(a.Size, 0), 64<<20))
	var off int64
	chunk := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(chunk, off)
		buf = append(buf, chunk[:n]...)
		off += int64(n)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return buf, PathErr("read", name, err)
		}
	}
}

// WriteFile creates or truncates name and writes data to it.
func WriteFile(ctx context.Context, fsys FS, name string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(ctx, fsys, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	wf, ok := f.(WritableFile)
	if !ok {
		f.Close()
		return PathErr("write", name, ErrReadOnly)
	}
	if _, err := wf.WriteAt(data, 0); err != nil {
		wf.Close()
		return err
	}
	return wf.Close()
}

// Truncate sets the size of a file by name. Without TruncateFS it opens the
// file for writing and truncates the handle.
func Truncate(ctx context.Context, fsys FS, name string, size int64) error {
	if t, ok := fsys.(TruncateFS); ok {
		return t.Truncate(ctx, name, size)
	}
	if _, ok := fsys.(OpenFileFS); !ok {
		return missing(fsys, "truncate", name)
	}
	f, err := OpenFile(ctx, fsys, name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	wf, ok := f.(WritableFile)
	if !ok {
		return PathErr("truncate", name, ErrNotSupported)
	}
	return wf.Truncate(size)
}

// Mkdir creates a directory.
func Mkdir(ctx context.Context, fsys FS, name string, perm fs.FileMode) error {
	if m, ok := fsys.(MkdirFS); ok {
		return m.Mkdir(ctx, name, perm)
	}
	return missing(fsys, "mkdir", name)
}

// MkdirAll creates a directory and any missing parents, like os.MkdirAll.
func MkdirAll(ctx context.Context, fsys FS, name string, perm fs.FileMode) error {
	if err := CheckPath("mkdir", name); err != nil {
		return err
	}
	if a, err := fsys.Stat(ctx, name); err == nil {
		if a.IsDir() {
			return nil
		}
		return PathErr("mkdir", name, ErrNotDir)
	}
	if dir, _ := Split(name); dir != "." {
		if err := MkdirAll(ctx, fsys, dir, perm); err != nil {
			return err
		}
	}
	err := Mkdir(ctx, fsys, name, perm)
	if err != nil && errors.Is(err, fs.ErrExist) {
		if a, serr := fsys.Stat(ctx, name); serr == nil && a.IsDir() {
			return nil
		}
	}
	return err
}

// Unlink removes a non-directory.
func Unlink(ctx context.Context, fsys FS, name string) error {
	if r, ok := fsys.(RemoveFS); ok {
		return r.Unlink(ctx, name)
	}
	return missing(fsys, "unlink", name)
}

// Rmdir removes an empty directory.
func Rmdir(ctx context.Context, fsys FS, name string) error {
	if r, ok := fsys.(RemoveFS); ok {
		return r.Rmdir(ctx, name)
	}
	return missing(fsys, "rmdir", name)
}

// Remove removes a file, symlink or empty directory, like os.Remove.
func Remove(ctx context.Context, fsys FS, name string) error {
	a, err := fsys.Stat(ctx, name)
	if err != nil {
		return err
	}
	if a.IsDir() {
		return Rmdir(ctx, fsys, name)
	}
	return Unlink(ctx, fsys, name)
}

// RemoveAll removes name and everything below it, like os.RemoveAll, but a
// missing name is an error (fs.ErrNotExist) so callers can report it.
func RemoveAll(ctx context.Context, fsys FS, name string) error {
	a, err := fsys.Stat(ctx, name)
	if err != nil {
		return err
	}
	if !a.IsDir() {
		return Unlink(ctx, fsys, name)
	}
	ents, err := fsys.ReadDir(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return PathErr("remove", name, err)
		}
		if err := RemoveAll(ctx, fsys, Join(name, e.Name)); err != nil {
			return err
		}
	}
	return Rmdir(ctx, fsys, name)
}

// Rename renames oldname to newname.
func Rename(ctx context.Context, fsys FS, oldname, newname string, flags RenameFlags) error {
	if r, ok := fsys.(RenameFS); ok {
		return r.Rename(ctx, oldname, newname, flags)
	}
	return missing(fsys, "rename", oldname)
}

// Symlink creates name as a symlink to target.
func Symlink(ctx context.Context, fsys FS, target, name string) error {
	if s, ok := fsys.(SymlinkFS); ok {
		return s.Symlink(ctx, target, name)
	}
	return missing(fsys, "symlink", name)
}

// Link creates newname as a hard link to oldname.
func Link(ctx context.Context, fsys FS, oldname, newname string) error {
	if l, ok := fsys.(LinkFS); ok {
		return l.Link(ctx, oldname, newname)
	}
	return missing(fsys, "link", newname)
}

// Mknod creates name as mknod(2) does: a FIFO, a socket or a device
// through fsys's MknodFS, and an empty regular file (mode with no type
// bits) through OpenFileFS, as the kernel's MKNOD of a regular file asks.
// A directory is fs.ErrPermission and a symlink or an unknown type
// fs.ErrInvalid, as mknod(2) answers EPERM and EINVAL.
func Mknod(ctx context.Context, fsys FS, name string, mode fs.FileMode, dev uint32) error {
	if err := CheckPath("mknod", name); err != nil {
		return err
	}
	switch typ := mode.Type(); {
	case typ == 0:
		f, err := OpenFile(ctx, fsys, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		return f.Close()
	case typ == fs.ModeDir:
		return PathErr("mknod", name, fs.ErrPermission)
	case !IsSpecial(typ):
		return PathErr("mknod", name, fs.ErrInvalid)
	}
	if m, ok := fsys.(MknodFS); ok {
		return m.Mknod(ctx, name, mode, dev)
	}
	return missing(fsys, "mknod", name)
}

// CheckMknod is what an implementation of [MknodFS] checks first: a valid
// name, a special type (fs.ErrInvalid otherwise) and, for a device, a
// caller that may make one (fs.ErrPermission otherwise, see
// [MayCreateDevice]). It returns the device number to store: dev for a
// device, 0 for a FIFO or a socket.
func CheckMknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) (uint32, error) {
	if err := CheckPath("mknod", name); err != nil {
		return 0, err
	}
	switch {
	case !IsSpecial(mode):
		return 0, PathErr("mknod", name, fs.ErrInvalid)
	case !IsDevice(mode):
		return 0, nil
	case !MayCreateDevice(ctx):
		return 0, PathErr("mknod", name, fs.ErrPermission)
	}
	return dev, nil
}

// IsSpecial reports whether mode is a FIFO, a socket or a device: a type
// whose content lives in the kernel, never in the mount.
func IsSpecial(mode fs.FileMode) bool {
	switch mode.Type() {
	case fs.ModeNamedPipe, fs.ModeSocket, fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return true
	}
	return false
}

// IsDevice reports whether mode is a character or block device.
func IsDevice(mode fs.FileMode) bool { return mode&fs.ModeDevice != 0 }

// DevNumbers splits a device number as Attr.Rdev holds it (FUSE's 32
// bits of dev_t) into its major and minor numbers.
func DevNumbers(dev uint32) (major, minor uint32) {
	return unix.Major(uint64(dev)), unix.Minor(uint64(dev))
}

// MakeDev is the device number of major and minor as Attr.Rdev holds it:
// makedev(3), for a major below 4096 and a minor below 2^20.
func MakeDev(major, minor uint32) uint32 { return uint32(unix.Mkdev(major, minor)) }

// Chmod changes permission bits.
func Chmod(ctx context.Context, fsys FS, name string, mode fs.FileMode) error {
	if c, ok := fsys.(ChmodFS); ok {
		return c.Chmod(ctx, name, mode)
	}
	return missing(fsys, "chmod", name)
}

// Chown changes owners; -1 leaves an id unchanged.
func Chown(ctx context.Context, fsys FS, name string, uid, gid int) error {
	if c, ok := fsys.(ChownFS); ok {
		return c.Chown(ctx, name, uid, gid)
	}
	return missing(fsys, "chown", name)
}

// Chtimes sets access and modification times; a zero time is unchanged.
func Chtimes(ctx context.Context, fsys FS, name string, atime, mtime time.Time) error {
	if c, ok := fsys.(ChtimesFS); ok {
		return c.Chtimes(ctx, name, atime, mtime)
	}
	return missing(fsys, "chtimes", name)
}

// GetXattr reads an extended attribute. Without XattrFS: ErrNotSupported.
func GetXattr(ctx context.Context, fsys FS, name, attr string) ([]byte, error) {
	if x, ok := fsys.(XattrFS); ok {
		return x.GetXattr(ctx, name, attr)
	}
	return nil, PathErr("getxattr", name, ErrNotSupported)
}

// ListXattr lists extended attribute names. Without XattrFS the list is
// empty: an entry with no attributes is what such a mount really has.
func ListXattr(ctx context.Context, fsys FS, name string) ([]string, error) {
	if x, ok := fsys.(XattrFS); ok {
		return x.ListXattr(ctx, name)
	}
	if _, err := fsys.Stat(ctx, name); err != nil {
		return nil, err
	}
	return nil, nil
}

// SetXattr writes an extended attribute.
func SetXattr(ctx context.Context, fsys FS, name, attr string, data []byte, flags int) error {
	if x, ok := fsys.(SetXattrFS); ok {
		return x.SetXattr(ctx, name, attr, data, flags)
	}
	return missing(fsys, "setxattr", name)
}

// RemoveXattr removes an extended attribute.
func RemoveXattr(ctx context.Context, fsys FS, name, attr string) error {
	if x, ok := fsys.(SetXattrFS); ok {
		return x.RemoveXattr(ctx, name, attr)
	}
	return missing(fsys, "removexattr", name)
}

// StatFS reports filesystem usage. Without StatFSer: ErrNotSupported.
func StatFS(ctx context.Context, fsys FS) (FSStat, error) {
	if s, ok := fsys.(StatFSer); ok {
		return s.StatFS(ctx)
	}
	return FSStat{}, PathErr("statfs", ".", ErrNotSupported)
}

// Sync makes name durable where the mount can (SyncFS). Without SyncFS
// there is nothing to make durable: it checks that name exists and
// succeeds.
func Sync(ctx context.Context, fsys FS, name string) error {
	if s, ok := fsys.(SyncFS); ok {
		return s.Sync(ctx, name)
	}
	_, err := fsys.Stat(ctx, name)
	return err
}

// OfferPages registers sink with fsys if it offers pages ([PageOfferer])
// and reports whether it does.
func OfferPages(fsys FS, sink PageSink) bool {
	if o, ok := fsys.(PageOfferer); ok {
		return o.OfferPages(sink)
	}
	return false
}

// StatDir lists name with the attributes of its entries: fsys's own
// StatDir when it has one (StatDirFS), otherwise StatEach. Decorators
// implement StatDirFS with it, so that the optimisation reaches through
// them.
func StatDir(ctx context.Context, fsys FS, name string) ([]DirEntry, []Attr, error) {
	if sd, ok := fsys.(StatDirFS); ok {
		return sd.StatDir(ctx, name)
	}
	return StatEach(ctx, fsys, name)
}

// StatEach lists name with ReadDir and stats every entry, leaving out an
// entry removed in between.
func StatEach(ctx context.Context, fsys FS, name string) ([]DirEntry, []Attr, error) {
	ents, err := fsys.ReadDir(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return StatEntries(ctx, fsys, name, ents)
}

// StatEntries stats the entries ents of directory name (a listing the
// caller made its own way), leaving out an entry removed since.
func StatEntries(ctx context.Context, fsys FS, name string, ents []DirEntry) ([]DirEntry, []Attr, error) {
	outE := make([]DirEntry, 0, len(ents))
	outA := make([]Attr, 0, len(ents))
	for _, e := range ents {
		a, err := fsys.Stat(ctx, Join(name, e.Name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, nil, err
		}
		outE = append(outE, e)
		outA = append(outA, a)
	}
	return outE, outA, nil
}
