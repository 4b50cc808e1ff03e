package fusefs

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Request counting ([Options.Counts]): how many requests of each kind the
// kernel sent, on every connection of a mount. go-fuse's own latency
// recording does nothing in the version this module uses, so the count is
// kept by a layer around the raw file system that each connection gets
// when it is asked for: one atomic add per request, nothing without it.

// Opcode names, the kernel's (include/uapi/linux/fuse.h, without FUSE_).
const (
	OpLookup        = "LOOKUP"
	OpForget        = "FORGET"
	OpGetattr       = "GETATTR"
	OpSetattr       = "SETATTR"
	OpMknod         = "MKNOD"
	OpMkdir         = "MKDIR"
	OpUnlink        = "UNLINK"
	OpRmdir         = "RMDIR"
	OpRename        = "RENAME"
	OpLink          = "LINK"
	OpSymlink       = "SYMLINK"
	OpReadlink      = "READLINK"
	OpAccess        = "ACCESS"
	OpGetxattr      = "GETXATTR"
	OpListxattr     = "LISTXATTR"
	OpSetxattr      = "SETXATTR"
	OpRemovexattr   = "REMOVEXATTR"
	OpCreate        = "CREATE"
	OpTmpfile       = "TMPFILE"
	OpOpen          = "OPEN"
	OpRead          = "READ"
	OpLseek         = "LSEEK"
	OpGetlk         = "GETLK"
	OpSetlk         = "SETLK"
	OpSetlkw        = "SETLKW"
	OpRelease       = "RELEASE"
	OpWrite         = "WRITE"
	OpCopyFileRange = "COPY_FILE_RANGE"
	OpIoctl         = "IOCTL"
	OpFlush         = "FLUSH"
	OpFsync         = "FSYNC"
	OpFallocate     = "FALLOCATE"
	OpOpendir       = "OPENDIR"
	OpReaddir       = "READDIR"
	OpReaddirplus   = "READDIRPLUS"
	OpReleasedir    = "RELEASEDIR"
	OpFsyncdir      = "FSYNCDIR"
	OpStatfs        = "STATFS"
	OpStatx         = "STATX"
)

// opNames lists the opcodes in the order of countOp's values.
var opNames = [...]string{
	OpLookup, OpForget, OpGetattr, OpSetattr, OpMknod, OpMkdir, OpUnlink,
	OpRmdir, OpRename, OpLink, OpSymlink, OpReadlink, OpAccess, OpGetxattr,
	OpListxattr, OpSetxattr, OpRemovexattr, OpCreate, OpTmpfile, OpOpen,
	OpRead, OpLseek, OpGetlk, OpSetlk, OpSetlkw, OpRelease, OpWrite,
	OpCopyFileRange, OpIoctl, OpFlush, OpFsync, OpFallocate, OpOpendir,
	OpReaddir, OpReaddirplus, OpReleasedir, OpFsyncdir, OpStatfs, OpStatx,
}

type countOp uint8

const (
	cLookup countOp = iota
	cForget
	cGetattr
	cSetattr
	cMknod
	cMkdir
	cUnlink
	cRmdir
	cRename
	cLink
	cSymlink
	cReadlink
	cAccess
	cGetxattr
	cListxattr
	cSetxattr
	cRemovexattr
	cCreate
	cTmpfile
	cOpen
	cRead
	cLseek
	cGetlk
	cSetlk
	cSetlkw
	cRelease
	cWrite
	cCopyFileRange
	cIoctl
	cFlush
	cFsync
	cFallocate
	cOpendir
	cReaddir
	cReaddirplus
	cReleasedir
	cFsyncdir
	cStatfs
	cStatx
	numCountOps
)

// RequestCounts counts the requests a mount's connections received, by
// opcode. Hand one to [Mount] in [Options.Counts]; it is safe to read
// while the mount serves. The zero value is ready to use.
//
// A FORGET is counted per node forgotten (go-fuse unpacks a BATCH_FORGET
// into one call per node), and it is a notice, not a round trip: the
// kernel does not wait for an answer. INIT, INTERRUPT and the replies to
// notifications are go-fuse's own and not counted.
type RequestCounts struct {
	n [numCountOps]atomic.Uint64
	// t is the time spent serving each opcode's requests, from the
	// call into the file system to the answer (not the kernel's part of
	// the round trip).
	t [numCountOps]atomic.Int64
}

// Requests is a snapshot of [RequestCounts]: opcode name to count, with
// only the opcodes that were sent.
type Requests map[string]uint64

// Snapshot returns the counts so far.
func (r *RequestCounts) Snapshot() Requests {
	s := Requests{}
	for i := range r.n {
		if v := r.n[i].Load(); v != 0 {
			s[opNames[i]] = v
		}
	}
	return s
}

// Served returns the time spent serving the requests so far, by opcode
// (only those sent): from go-fuse's call to the answer, without the
// kernel's part of the round trip.
func (r *RequestCounts) Served() map[string]time.Duration {
	s := map[string]time.Duration{}
	for i := range r.t {
		if v := r.t[i].Load(); v != 0 {
			s[opNames[i]] = time.Duration(v)
		}
	}
	return s
}

// Sub returns the requests of s that were not yet in before: the
// requests of whatever ran between the two snapshots.
func (s Requests) Sub(before Requests) Requests {
	d := Requests{}
	for op, v := range s {
		if v > before[op] {
			d[op] = v - before[op]
		}
	}
	return d
}

// Waited is the number of requests a caller waited for: all but FORGET.
func (s Requests) Waited() uint64 {
	var t uint64
	for op, v := range s {
		if op != OpForget {
			t += v
		}
	}
	return t
}

// String lists the counts as "OP=n", in opcode order.
func (s Requests) String() string {
	var parts []string
	for _, op := range opNames {
		if v, ok := s[op]; ok {
			parts = append(parts, op+"="+strconv.FormatUint(v, 10))
		}
	}
	return strings.Join(parts, " ")
}

// counted counts each request on its way to the raw file system below.
type counted struct {
	fuse.RawFileSystem
	n *RequestCounts
}

// add counts one request of op that started at start, once it is
// served: the count is there before the kernel has the answer.
func (c counted) add(op countOp, start time.Time) {
	c.n.t[op].Add(int64(time.Since(start)))
	c.n.n[op].Add(1)
}

func (c counted) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer c.add(cLookup, time.Now())
	return c.RawFileSystem.Lookup(cancel, h, name, out)
}

func (c counted) Forget(nodeid, nlookup uint64) {
	defer c.add(cForget, time.Now())
	c.RawFileSystem.Forget(nodeid, nlookup)
}

func (c counted) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer c.add(cGetattr, time.Now())
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

func (c counted) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer c.add(cSetattr, time.Now())
	return c.RawFileSystem.SetAttr(cancel, in, out)
}

func (c counted) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer c.add(cMknod, time.Now())
	return c.RawFileSystem.Mknod(cancel, in, name, out)
}

func (c counted) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer c.add(cMkdir, time.Now())
	return c.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (c counted) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer c.add(cUnlink, time.Now())
	return c.RawFileSystem.Unlink(cancel, h, name)
}

func (c counted) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer c.add(cRmdir, time.Now())
	return c.RawFileSystem.Rmdir(cancel, h, name)
}

func (c counted) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer c.add(cRename, time.Now())
	return c.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (c counted) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	defer c.add(cLink, time.Now())
	return c.RawFileSystem.Link(cancel, in, name, out)
}

func (c counted) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	defer c.add(cSymlink, time.Now())
	return c.RawFileSystem.Symlink(cancel, h, target, name, out)
}

func (c counted) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer c.add(cReadlink, time.Now())
	return c.RawFileSystem.Readlink(cancel, h)
}

func (c counted) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer c.add(cAccess, time.Now())
	return c.RawFileSystem.Access(cancel, in)
}

func (c counted) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer c.add(cGetxattr, time.Now())
	return c.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (c counted) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer c.add(cListxattr, time.Now())
	return c.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (c counted) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	defer c.add(cSetxattr, time.Now())
	return c.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (c counted) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	defer c.add(cRemovexattr, time.Now())
	return c.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (c counted) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer c.add(cCreate, time.Now())
	return c.RawFileSystem.Create(cancel, in, name, out)
}

func (c counted) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	defer c.add(cTmpfile, time.Now())
	return c.RawFileSystem.Tmpfile(cancel, in, out)
}

func (c counted) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer c.add(cOpen, time.Now())
	return c.RawFileSystem.Open(cancel, in, out)
}

func (c counted) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer c.add(cRead, time.Now())
	return c.RawFileSystem.Read(cancel, in, buf)
}

func (c counted) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	defer c.add(cLseek, time.Now())
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c counted) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	defer c.add(cGetlk, time.Now())
	return c.RawFileSystem.GetLk(cancel, in, out)
}

func (c counted) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer c.add(cSetlk, time.Now())
	return c.RawFileSystem.SetLk(cancel, in)
}

func (c counted) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer c.add(cSetlkw, time.Now())
	return c.RawFileSystem.SetLkw(cancel, in)
}

func (c counted) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	defer c.add(cRelease, time.Now())
	c.RawFileSystem.Release(cancel, in)
}

// Writev is where go-fuse hands every WRITE first; Write only when the
// file system below answers Writev with ENOSYS, so only Writev counts.
func (c counted) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer c.add(cWrite, time.Now())
	return c.RawFileSystem.Writev(cancel, in, data)
}

func (c counted) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	defer c.add(cCopyFileRange, time.Now())
	return c.RawFileSystem.CopyFileRange(cancel, in)
}

func (c counted) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	defer c.add(cIoctl, time.Now())
	return c.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (c counted) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer c.add(cFlush, time.Now())
	return c.RawFileSystem.Flush(cancel, in)
}

func (c counted) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer c.add(cFsync, time.Now())
	return c.RawFileSystem.Fsync(cancel, in)
}

func (c counted) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer c.add(cFallocate, time.Now())
	return c.RawFileSystem.Fallocate(cancel, in)
}

func (c counted) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer c.add(cOpendir, time.Now())
	return c.RawFileSystem.OpenDir(cancel, in, out)
}

func (c counted) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer c.add(cReaddir, time.Now())
	return c.RawFileSystem.ReadDir(cancel, in, out)
}

func (c counted) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer c.add(cReaddirplus, time.Now())
	return c.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (c counted) ReleaseDir(in *fuse.ReleaseIn) {
	defer c.add(cReleasedir, time.Now())
	c.RawFileSystem.ReleaseDir(in)
}

func (c counted) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer c.add(cFsyncdir, time.Now())
	return c.RawFileSystem.FsyncDir(cancel, in)
}

func (c counted) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer c.add(cStatfs, time.Now())
	return c.RawFileSystem.StatFs(cancel, h, out)
}

func (c counted) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	defer c.add(cStatx, time.Now())
	return c.RawFileSystem.Statx(cancel, in, out)
}
