package policy

import (
	"context"
	"fmt"
	"io/fs"
	"os"

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
// passthrough open would force the writer that follows into one. It is a
// [mounts.Watch] wrapper.
func Audit(fsys mounts.FS, l *AuditLog) mounts.FS {
	if l == nil {
		return fsys
	}
	return mounts.Watch(fsys, mounts.Watcher{Done: l.record, StatCreates: true})
}

func wpath(name string) string { return mounts.PathOf(name) }

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

// record logs the line of one call made through Audit, if it is one that
// is logged. The calls of a file carry the caller of its open: the one to
// blame for the writes, as a kernel handle is written and released by
// later requests.
func (l *AuditLog) record(ctx context.Context, c mounts.Call, err error) {
	if r, ok := lineOf(c, err); ok {
		l.line(ctx, r, err)
	}
}

// line takes the line by value, so that the calls not logged (every read)
// do not pay for one on the heap.
func (l *AuditLog) line(ctx context.Context, r Record, err error) { l.mutation(ctx, &r, err) }

// lineOf is the line of c, if c is logged; its outcome is mutation's.
func lineOf(c mounts.Call, err error) (Record, bool) {
	var r Record
	switch c.Op {
	case mounts.OpOpenFile:
		created := c.Flag&os.O_CREATE != 0 && !c.Existed
		switch {
		case err != nil && created:
			r.Op = "create"
		case err != nil:
			r.Op = "write"
		case created:
			r.Op, r.Mode = "create", octal(c.Mode)
		case c.Flag&os.O_TRUNC != 0:
			zero := int64(0)
			r.Op, r.Size = "truncate", &zero
		default:
			return r, false
		}
	case mounts.OpFileClose:
		if c.Written == 0 && err == nil {
			return r, false
		}
		// The bytes are in the file whether or not close failed: the
		// line says both.
		n := c.Written
		r.Op, r.Bytes = "write", &n
	case mounts.OpTruncate, mounts.OpFileTruncate:
		size := c.Size
		r.Op, r.Size = "truncate", &size
	case mounts.OpMkdir:
		r.Op, r.Mode = "mkdir", octal(c.Mode)
	case mounts.OpUnlink, mounts.OpRmdir, mounts.OpChown, mounts.OpChtimes:
		r.Op = c.Op.String()
	case mounts.OpRename:
		r.Op, r.To = "rename", wpath(c.NewName)
		if c.RenameFlags&mounts.RenameExchange != 0 {
			r.Op = "exchange"
		}
	case mounts.OpLink:
		r.Op, r.To = "link", wpath(c.NewName)
	case mounts.OpSymlink:
		r.Op, r.Target = "symlink", c.Target
	case mounts.OpMknod:
		r.Op, r.Mode, r.Type = "mknod", octal(c.Mode), nodeType(c.Mode, c.Dev)
	case mounts.OpChmod:
		r.Op, r.Mode = "chmod", octal(c.Mode)
	case mounts.OpSetXattr, mounts.OpRemoveXattr:
		r.Op, r.Attr = c.Op.String(), c.Attr
	default:
		// Reads, and Sync, which changes nothing.
		return r, false
	}
	r.Path = wpath(c.Name)
	return r, true
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
