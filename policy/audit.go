package policy

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Audit wraps fsys so that every mutation made through it, allowed or
// refused, appends one line to l with the caller of its context (the
// kernel face's pid and uid, or the tool call id). Names are logged as
// workspace paths ("/repo/x.go"); contents never are.
//
// Lines per operation:
//
//   - OpenFile for writing: "create" when O_CREATE made the file (a Stat
//     first tells), "truncate" when O_TRUNC emptied an existing one, and
//     on Close one "write" line with the bytes written through the handle
//     (none when nothing was written). A refused open is one line with
//     the outcome "denied" or "error". Through the kernel, Close is the
//     FUSE release, which the kernel sends after close(2) has returned:
//     the write line may trail the writer's close by a moment.
//   - Truncate (by name or handle), Mkdir, Unlink, Rmdir, Rename, Link,
//     Symlink, Mknod, Chmod, Chown, Chtimes, SetXattr, RemoveXattr: one line each.
//
// Reads are not logged. The wrapper reports fsys's capabilities and
// descriptions. Writable opens are wrapped to count bytes and therefore
// never offer mounts.FDFile (FUSE passthrough would write behind the
// count's back). Read-only opens hide it too: the kernel serves every open
// of a file the same way, passthrough or not, so a reader holding a
// passthrough open would force the writer that follows into one.
func Audit(fsys mounts.FS, l *AuditLog) mounts.FS {
	if l == nil {
		return fsys
	}
	return &audited{fsys: fsys, l: l}
}

var (
	_ mounts.OpenFileFS         = (*audited)(nil)
	_ mounts.StatDirFS          = (*audited)(nil)
	_ mounts.TruncateFS         = (*audited)(nil)
	_ mounts.MkdirFS            = (*audited)(nil)
	_ mounts.RemoveFS           = (*audited)(nil)
	_ mounts.RenameFS           = (*audited)(nil)
	_ mounts.SymlinkFS          = (*audited)(nil)
	_ mounts.MknodFS            = (*audited)(nil)
	_ mounts.LinkFS             = (*audited)(nil)
	_ mounts.ChmodFS            = (*audited)(nil)
	_ mounts.ChownFS            = (*audited)(nil)
	_ mounts.ChtimesFS          = (*audited)(nil)
	_ mounts.XattrFS            = (*audited)(nil)
	_ mounts.SetXattrFS         = (*audited)(nil)
	_ mounts.StatFSer           = (*audited)(nil)
	_ mounts.SyncFS             = (*audited)(nil)
	_ mounts.CapabilityReporter = (*audited)(nil)
	_ mounts.Describer          = (*audited)(nil)
	_ mounts.PathDescriber      = (*audited)(nil)
	_ mounts.WritableFile       = (*auditedFile)(nil)
)

type audited struct {
	fsys mounts.FS
	l    *AuditLog
}

func (a *audited) Capabilities() mounts.Capability           { return mounts.Capabilities(a.fsys) }
func (a *audited) Describe() mounts.Description              { return mounts.Describe(a.fsys) }
func (a *audited) DescribeAt(name string) mounts.Description { return mounts.DescribeAt(a.fsys, name) }

func (a *audited) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	return a.fsys.Stat(ctx, name)
}

func (a *audited) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	return a.fsys.ReadDir(ctx, name)
}

func (a *audited) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	return mounts.StatDir(ctx, a.fsys, name)
}

func (a *audited) Open(ctx context.Context, name string) (mounts.File, error) {
	return hideFd(a.fsys.Open(ctx, name))
}

// readFile is a file opened for reading through the audit: fsys's file
// without its host descriptor (see Audit).
type readFile struct{ mounts.File }

func hideFd(f mounts.File, err error) (mounts.File, error) {
	if err != nil {
		return nil, err
	}
	if _, ok := f.(mounts.FDFile); !ok {
		return f, nil
	}
	return readFile{f}, nil
}

func (a *audited) ReadLink(ctx context.Context, name string) (string, error) {
	return a.fsys.ReadLink(ctx, name)
}

// rec logs one line for name and returns err.
func (a *audited) rec(ctx context.Context, err error, r Record) error {
	a.l.mutation(ctx, &r, err)
	return err
}

func wpath(name string) string { return mounts.ToSlash(name) }

// octal renders permission bits as chmod(1) takes them: "0644", "04755".
func octal(m fs.FileMode) string {
	bits := uint32(m.Perm())
	for _, b := range []struct {
		mode fs.FileMode
		bit  uint32
	}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
		if m&b.mode != 0 {
			bits |= b.bit
		}
	}
	return fmt.Sprintf("%#o", bits)
}

func (a *audited) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if !mounts.WantsWrite(flag) {
		return a.Open(ctx, name)
	}
	existed := flag&os.O_EXCL == 0 // O_EXCL succeeds only by creating
	if flag&os.O_CREATE != 0 && existed {
		_, err := a.fsys.Stat(ctx, name)
		existed = err == nil
	} else if flag&os.O_CREATE == 0 {
		existed = true
	}
	f, err := mounts.OpenFile(ctx, a.fsys, name, flag, perm)
	switch {
	case err != nil:
		op := "write"
		if flag&os.O_CREATE != 0 && !existed {
			op = "create"
		}
		a.rec(ctx, err, Record{Op: op, Path: wpath(name)})
		return nil, err
	case !existed:
		a.rec(ctx, nil, Record{Op: "create", Path: wpath(name), Mode: octal(perm)})
	case flag&os.O_TRUNC != 0:
		zero := int64(0)
		a.rec(ctx, nil, Record{Op: "truncate", Path: wpath(name), Size: &zero})
	}
	w, ok := f.(mounts.WritableFile)
	if !ok {
		return hideFd(f, nil)
	}
	// The caller of the open is the one to blame for the writes: a
	// kernel handle is written and released by later requests.
	c, _ := mounts.CallerFrom(ctx)
	return &auditedFile{WritableFile: w, a: a, name: name, caller: c}, nil
}

func (a *audited) Truncate(ctx context.Context, name string, size int64) error {
	return a.rec(ctx, mounts.Truncate(ctx, a.fsys, name, size), Record{Op: "truncate", Path: wpath(name), Size: &size})
}

func (a *audited) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return a.rec(ctx, mounts.Mkdir(ctx, a.fsys, name, perm), Record{Op: "mkdir", Path: wpath(name), Mode: octal(perm)})
}

func (a *audited) Unlink(ctx context.Context, name string) error {
	return a.rec(ctx, mounts.Unlink(ctx, a.fsys, name), Record{Op: "unlink", Path: wpath(name)})
}

func (a *audited) Rmdir(ctx context.Context, name string) error {
	return a.rec(ctx, mounts.Rmdir(ctx, a.fsys, name), Record{Op: "rmdir", Path: wpath(name)})
}

func (a *audited) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	op := "rename"
	if flags&mounts.RenameExchange != 0 {
		op = "exchange"
	}
	return a.rec(ctx, mounts.Rename(ctx, a.fsys, oldname, newname, flags), Record{Op: op, Path: wpath(oldname), To: wpath(newname)})
}

func (a *audited) Symlink(ctx context.Context, target, name string) error {
	return a.rec(ctx, mounts.Symlink(ctx, a.fsys, target, name), Record{Op: "symlink", Path: wpath(name), Target: target})
}

func (a *audited) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	return a.rec(ctx, mounts.Mknod(ctx, a.fsys, name, mode, dev), Record{Op: "mknod", Path: wpath(name), Mode: octal(mode), Type: nodeType(mode, dev)})
}

// nodeType names the type of a mknod for the audit log.
func nodeType(mode fs.FileMode, dev uint32) string {
	switch t := mode.Type(); {
	case t == fs.ModeNamedPipe:
		return "fifo"
	case t == fs.ModeSocket:
		return "socket"
	case t == 0:
		return "file"
	case mounts.IsDevice(t):
		kind := "block"
		if t&fs.ModeCharDevice != 0 {
			kind = "char"
		}
		major, minor := mounts.DevNumbers(dev)
		return fmt.Sprintf("%s %d:%d", kind, major, minor)
	}
	return mode.Type().String()
}

func (a *audited) Link(ctx context.Context, oldname, newname string) error {
	return a.rec(ctx, mounts.Link(ctx, a.fsys, oldname, newname), Record{Op: "link", Path: wpath(oldname), To: wpath(newname)})
}

func (a *audited) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return a.rec(ctx, mounts.Chmod(ctx, a.fsys, name, mode), Record{Op: "chmod", Path: wpath(name), Mode: octal(mode)})
}

func (a *audited) Chown(ctx context.Context, name string, uid, gid int) error {
	return a.rec(ctx, mounts.Chown(ctx, a.fsys, name, uid, gid), Record{Op: "chown", Path: wpath(name)})
}

func (a *audited) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return a.rec(ctx, mounts.Chtimes(ctx, a.fsys, name, atime, mtime), Record{Op: "chtimes", Path: wpath(name)})
}

func (a *audited) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	return mounts.GetXattr(ctx, a.fsys, name, attr)
}

func (a *audited) ListXattr(ctx context.Context, name string) ([]string, error) {
	return mounts.ListXattr(ctx, a.fsys, name)
}

func (a *audited) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	return a.rec(ctx, mounts.SetXattr(ctx, a.fsys, name, attr, data, flags), Record{Op: "setxattr", Path: wpath(name), Attr: attr})
}

func (a *audited) RemoveXattr(ctx context.Context, name, attr string) error {
	return a.rec(ctx, mounts.RemoveXattr(ctx, a.fsys, name, attr), Record{Op: "removexattr", Path: wpath(name), Attr: attr})
}

func (a *audited) StatFS(ctx context.Context) (mounts.FSStat, error) {
	return mounts.StatFS(ctx, a.fsys)
}

// Sync changes nothing, so it is not a line of the log.
func (a *audited) Sync(ctx context.Context, name string) error {
	return mounts.Sync(ctx, a.fsys, name)
}

// auditedFile counts the bytes written through one handle and logs them
// in one line at Close, so a file written in many kernel requests costs
// one line, not one per request.
type auditedFile struct {
	mounts.WritableFile
	a      *audited
	name   string
	caller mounts.Caller
	n      atomic.Int64
	closed sync.Once
}

func (f *auditedFile) ctx() context.Context {
	return mounts.WithCaller(context.Background(), f.caller)
}

func (f *auditedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

func (f *auditedFile) Truncate(size int64) error {
	err := f.WritableFile.Truncate(size)
	f.a.l.mutation(f.ctx(), &Record{Op: "truncate", Path: wpath(f.name), Size: &size}, err)
	return err
}

func (f *auditedFile) Close() error {
	err := f.WritableFile.Close()
	f.closed.Do(func() {
		if n := f.n.Load(); n > 0 || err != nil {
			// The bytes are in the file whether or not close failed:
			// the line says both.
			f.a.l.mutation(f.ctx(), &Record{Op: "write", Path: wpath(f.name), Bytes: &n}, err)
		}
	})
	return err
}
