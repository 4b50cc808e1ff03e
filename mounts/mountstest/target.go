package mountstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// target is the system under test as the shared checks see it: a mount
// driven through the helpers of package mounts (libTarget), or a directory
// driven through system calls (osTarget). Names are mount-relative in both.
type target interface {
	ioFS() fs.FS
	stat(name string) (mounts.Attr, error)
	readDir(name string) ([]mounts.DirEntry, error)
	readFile(name string) ([]byte, error)
	readLink(name string) (string, error)
	openFile(name string, flag int, perm fs.FileMode) (handle, error)
	truncate(name string, size int64) error
	mkdir(name string, perm fs.FileMode) error
	unlink(name string) error
	rmdir(name string) error
	rename(oldname, newname string, flags mounts.RenameFlags) error
	symlink(target, name string) error
	mknod(name string, mode fs.FileMode, dev uint32) error
	// mayCreateDevice says whether this flavour's caller may mknod a
	// device (root, or a mount's caller that MayCreateDevice admits).
	mayCreateDevice() bool
	link(oldname, newname string) error
	chmod(name string, mode fs.FileMode) error
	chown(name string, uid, gid int) error
	chtimes(name string, atime, mtime time.Time) error
	getXattr(name, attr string) ([]byte, error)
	listXattr(name string) ([]string, error)
	setXattr(name, attr string, data []byte, flags int) error
	removeXattr(name, attr string) error
	statFS() (mounts.FSStat, error)
	// checkShape checks the flavour's error rules beyond errors.Is: for a
	// mount, a *fs.PathError naming one of names.
	checkShape(t *testing.T, err error, names ...string)
	// umask is what the creation perms lose (the process umask through
	// the kernel, nothing for a mount).
	umask() fs.FileMode
}

// handle is an open file of either flavour.
type handle interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Stat() (mounts.Attr, error)
	Close() error
}

// libTarget drives a mount through the helpers, as the union, the kernel
// face and the tools do. With dir (At) other than ".", the mount is that
// directory of fsys: names are passed below it.
type libTarget struct {
	ctx  context.Context
	fsys mounts.FS
	dir  string
}

// at is the name of fsys for the suite's name. An invalid name stays
// invalid: "dir" joined with "../x" is "dir/../x".
func (x *libTarget) at(name string) string {
	if x.dir == "." || x.dir == "" {
		return name
	}
	if name == "." {
		return x.dir
	}
	return x.dir + "/" + name
}

func (x *libTarget) ioFS() fs.FS {
	f := mounts.IOFS(x.ctx, x.fsys)
	if x.dir == "." || x.dir == "" {
		return f
	}
	sub, err := fs.Sub(f, x.dir)
	if err != nil {
		panic(err) // x.dir is valid: Run checked it
	}
	return sub
}
func (x *libTarget) stat(name string) (mounts.Attr, error) {
	return x.fsys.Stat(x.ctx, x.at(name))
}
func (x *libTarget) readDir(name string) ([]mounts.DirEntry, error) {
	return x.fsys.ReadDir(x.ctx, x.at(name))
}
func (x *libTarget) statDir(name string) ([]mounts.DirEntry, []mounts.Attr, bool, error) {
	sd, ok := x.fsys.(mounts.StatDirFS)
	if !ok {
		return nil, nil, false, nil
	}
	ents, attrs, err := sd.StatDir(x.ctx, x.at(name))
	return ents, attrs, true, err
}
func (x *libTarget) open(name string) (mounts.File, error) {
	return x.fsys.Open(x.ctx, x.at(name))
}
func (x *libTarget) readFile(name string) ([]byte, error) {
	return mounts.ReadFile(x.ctx, x.fsys, x.at(name))
}
func (x *libTarget) readLink(name string) (string, error) {
	return x.fsys.ReadLink(x.ctx, x.at(name))
}
func (x *libTarget) openFile(name string, flag int, perm fs.FileMode) (handle, error) {
	f, err := mounts.OpenFile(x.ctx, x.fsys, x.at(name), flag, perm)
	if err != nil {
		return nil, err
	}
	return libHandle{File: f, name: name}, nil
}
func (x *libTarget) truncate(name string, size int64) error {
	return mounts.Truncate(x.ctx, x.fsys, x.at(name), size)
}
func (x *libTarget) mkdir(name string, perm fs.FileMode) error {
	return mounts.Mkdir(x.ctx, x.fsys, x.at(name), perm)
}
func (x *libTarget) unlink(name string) error { return mounts.Unlink(x.ctx, x.fsys, x.at(name)) }
func (x *libTarget) rmdir(name string) error  { return mounts.Rmdir(x.ctx, x.fsys, x.at(name)) }
func (x *libTarget) rename(oldname, newname string, flags mounts.RenameFlags) error {
	return mounts.Rename(x.ctx, x.fsys, x.at(oldname), x.at(newname), flags)
}
func (x *libTarget) symlink(target, name string) error {
	return mounts.Symlink(x.ctx, x.fsys, target, x.at(name))
}
func (x *libTarget) mknod(name string, mode fs.FileMode, dev uint32) error {
	return mounts.Mknod(x.ctx, x.fsys, x.at(name), mode, dev)
}
func (x *libTarget) mayCreateDevice() bool { return mounts.MayCreateDevice(x.ctx) }
func (x *libTarget) link(oldname, newname string) error {
	return mounts.Link(x.ctx, x.fsys, x.at(oldname), x.at(newname))
}
func (x *libTarget) chmod(name string, mode fs.FileMode) error {
	return mounts.Chmod(x.ctx, x.fsys, x.at(name), mode)
}
func (x *libTarget) chown(name string, uid, gid int) error {
	return mounts.Chown(x.ctx, x.fsys, x.at(name), uid, gid)
}
func (x *libTarget) chtimes(name string, atime, mtime time.Time) error {
	return mounts.Chtimes(x.ctx, x.fsys, x.at(name), atime, mtime)
}
func (x *libTarget) getXattr(name, attr string) ([]byte, error) {
	return mounts.GetXattr(x.ctx, x.fsys, x.at(name), attr)
}
func (x *libTarget) listXattr(name string) ([]string, error) {
	return mounts.ListXattr(x.ctx, x.fsys, x.at(name))
}
func (x *libTarget) setXattr(name, attr string, data []byte, flags int) error {
	return mounts.SetXattr(x.ctx, x.fsys, x.at(name), attr, data, flags)
}
func (x *libTarget) removeXattr(name, attr string) error {
	return mounts.RemoveXattr(x.ctx, x.fsys, x.at(name), attr)
}

// statFS names no path: an error names the root of fsys, ".", which is
// the suite's "." only at the root; below dir (At), the suite's "." is
// dir.
func (x *libTarget) statFS() (mounts.FSStat, error) {
	st, err := mounts.StatFS(x.ctx, x.fsys)
	if pe, ok := err.(*fs.PathError); ok && pe.Path == "." {
		return st, &fs.PathError{Op: pe.Op, Path: x.at("."), Err: pe.Err}
	}
	return st, err
}
func (x *libTarget) umask() fs.FileMode { return 0 }

func (x *libTarget) checkShape(t *testing.T, err error, names ...string) {
	t.Helper()
	var pe *fs.PathError
	if !assert.Truef(t, errors.As(err, &pe), "error %v (%T) is not a *fs.PathError", err, err) {
		return
	}
	passed := make([]string, len(names))
	for i, n := range names {
		passed[i] = x.at(n)
	}
	assert.Containsf(t, passed, pe.Path, "*fs.PathError.Path of %v names none of the arguments", err)
}

// libHandle adapts a mounts.File; writing needs a mounts.WritableFile.
type libHandle struct {
	mounts.File
	name string
}

func (h libHandle) WriteAt(p []byte, off int64) (int, error) {
	if w, ok := h.File.(mounts.WritableFile); ok {
		return w.WriteAt(p, off)
	}
	return 0, fmt.Errorf("mountstest: %s: open file is a %T, not a mounts.WritableFile", h.name, h.File)
}

func (h libHandle) Truncate(size int64) error {
	if w, ok := h.File.(mounts.WritableFile); ok {
		return w.Truncate(size)
	}
	return fmt.Errorf("mountstest: %s: open file is a %T, not a mounts.WritableFile", h.name, h.File)
}

// env is what a round trip gets: its fresh target and the mount's
// description.
type env struct {
	cfg     *config
	x       target
	caps    mounts.Capability
	library bool
}

// wantErr asserts err wraps want, in the flavour's shape. Through the kernel
// fs.ErrInvalid arrives as EINVAL, which does not match it with errors.Is.
func wantErr(t *testing.T, x target, err, want error, names ...string) bool {
	t.Helper()
	if !assert.Errorf(t, err, "want an error wrapping %v", want) {
		return false
	}
	ok := errors.Is(err, want)
	if _, isLib := x.(*libTarget); !isLib && want == fs.ErrInvalid {
		ok = ok || errors.Is(err, syscall.EINVAL)
	}
	x.checkShape(t, err, names...)
	return assert.Truef(t, ok, "got error %v, want one wrapping %v", err, want)
}

// entry is one name of a snapshot.
type entry struct {
	Mode   fs.FileMode
	Size   int64
	Uid    uint32
	Gid    uint32
	Mtime  time.Time
	Data   string // regular files
	Target string // symlinks
}

// snapshot records the whole tree, so "nothing changed" can be asserted.
func snapshot(t *testing.T, x target) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := x.readDir(dir)
		require.NoErrorf(t, err, "snapshot: ReadDir(%q)", dir)
		for _, e := range ents {
			name := mounts.Join(dir, e.Name)
			a, err := x.stat(name)
			require.NoErrorf(t, err, "snapshot: Stat(%q)", name)
			en := entry{Mode: a.Mode, Size: a.Size, Uid: a.Uid, Gid: a.Gid, Mtime: a.Mtime}
			switch {
			case a.Mode.IsRegular():
				data, err := x.readFile(name)
				require.NoErrorf(t, err, "snapshot: ReadFile(%q)", name)
				en.Data = string(data)
			case a.Mode&fs.ModeSymlink != 0:
				en.Target, err = x.readLink(name)
				require.NoErrorf(t, err, "snapshot: ReadLink(%q)", name)
			}
			out[name] = en
			if a.IsDir() {
				walk(name)
			}
		}
	}
	walk(".")
	return out
}

func requireEmpty(t *testing.T, x target) {
	t.Helper()
	ents, err := x.readDir(".")
	require.NoError(t, err, "ReadDir of a fresh mount's root")
	require.Emptyf(t, ents, "writable mounts must be handed empty, found %v", ents)
}

// readDirNames lists a directory's names, in the order returned.
func readDirNames(t *testing.T, x target, name string) []string {
	t.Helper()
	ents, err := x.readDir(name)
	require.NoErrorf(t, err, "ReadDir(%q)", name)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names
}

// writeFile creates or truncates name and writes data, through the target.
func writeFile(t *testing.T, x target, name, data string, perm fs.FileMode) {
	t.Helper()
	h, err := x.openFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	require.NoErrorf(t, err, "create %q", name)
	n, err := h.WriteAt([]byte(data), 0)
	require.NoErrorf(t, err, "write %q", name)
	require.Equal(t, len(data), n, "short write")
	require.NoErrorf(t, h.Close(), "close %q", name)
}

func assertContent(t *testing.T, x target, name, want string) {
	t.Helper()
	got, err := x.readFile(name)
	if assert.NoErrorf(t, err, "read %q", name) {
		assert.Equalf(t, want, string(got), "content of %q", name)
	}
}

func assertNotExist(t *testing.T, x target, name string) {
	t.Helper()
	_, err := x.stat(name)
	wantErr(t, x, err, fs.ErrNotExist, name)
}

func mustStat(t *testing.T, x target, name string) mounts.Attr {
	t.Helper()
	a, err := x.stat(name)
	require.NoErrorf(t, err, "Stat(%q)", name)
	return a
}

// perm returns the permission bits plus setuid, setgid and sticky.
func perm(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// sortedCopy is for messages that compare listings.
func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func longName(n int) string { return strings.Repeat("x", n) }
