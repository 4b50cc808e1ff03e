package fusefs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// This file is stacking ([Options.StackConnections]) and the readiness
// gate that keeps a stacked workspace from being seen half mounted (see
// "# Connections" and "# Readiness" in the package doc): which
// directories get a connection of their own, of which kind, how they are
// mounted on the main connection, and how the main connection holds
// other processes until they are.

// StackedXattr is the extended attribute of a workspace's root that lists
// the connections stacked on top of it (see "# Readiness" in the package
// doc): one fsys-relative directory name a line, each ending in "\n", in
// the order they were mounted; empty when there are none. It is read-only,
// answered by this package whatever the mounts below hold, and not listed
// by listxattr, so archivers do not copy it.
const StackedXattr = "user.vfsmount.stacked"

// seams are where this package's tests step into a mount; [Mount] passes
// none. They belong to one mount, so tests running at once never see each
// other's.
type seams struct {
	// roots, when set, replaces the roots stacking derives from the
	// mount table, so a test can offer ones that do not qualify.
	roots []string
	// wrapRaw wraps each connection's raw file system, so a test can see
	// requests as go-fuse hands them over.
	wrapRaw func(fuse.RawFileSystem) fuse.RawFileSystem
	// mainMounted is called once the main connection is mounted and
	// before any stacked one is, with the mount point: a test can act in
	// the window that the gate closes.
	mainMounted func(mountpoint string)
	// held is called each time the gate starts holding a request of
	// another process.
	held func()
}

// mount is [Mount] with the seams of a test.
func mount(mountpoint string, fsys mounts.FS, opts Options, sm seams) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	kind, roots := stacking(fsys, opts, sm, logger)
	c := newConn(fsys, kind, ".", 0)
	g := newGate(sm.held)
	if !g.procOK {
		logger.Warn("fusefs: /proc does not show this process as the kernel names it; other processes may see the workspace before it is whole")
	}
	// Whatever happens below, the gate opens when mount returns: a held
	// request must never outlive the mounting.
	defer g.release()
	s, err := mountConn(mountpoint, c, opts, g, sm)
	if err != nil {
		c.readers.clear(false)
		return nil, err
	}
	if sm.mainMounted != nil {
		sm.mainMounted(mountpoint)
	}
	var stacked []string
	for _, root := range roots {
		sub, err := s.mountStacked(root, opts, sm)
		if err != nil {
			logger.Warn("fusefs: serving a mount through the main connection",
				"root", root, "err", err)
			continue
		}
		s.subs = append(s.subs, sub)
		stacked = append(stacked, root)
	}
	s.gated.setStacked(stacked)
	s.storePages()
	return s, nil
}

// ImmutableRoots returns the directories [Options.StackConnections] serves
// on immutable connections of their own, from fsys's mount table
// ([mounts.Mounts]): the mount points of immutable mounts with no other
// mount below them, or "." when every mount is immutable, or fsys is a
// single immutable mount. A writable mount over an immutable one (a
// copy-on-write git mount) describes itself as not immutable, and is none
// of them.
func ImmutableRoots(fsys mounts.FS) []string {
	table := mounts.Mounts(fsys)
	if table == nil {
		if mounts.Describe(fsys).Immutable {
			return []string{"."}
		}
		return nil
	}
	var roots []string
	all := true
	for _, m := range table {
		if !m.Immutable {
			all = false
			continue
		}
		name := strings.TrimPrefix(m.Prefix, "/")
		if name == "" {
			name = "."
		}
		nested := slices.ContainsFunc(table, func(o mounts.MountInfo) bool {
			return o.Prefix != m.Prefix && (m.Prefix == "/" || strings.HasPrefix(o.Prefix, m.Prefix+"/"))
		})
		if !nested && name != "." {
			roots = append(roots, name)
		}
	}
	if all && len(table) > 0 {
		return []string{"."}
	}
	return roots
}

// CopyOnWriteRoots returns the directories [Options.StackConnections]
// serves on copy-on-write connections of their own, from fsys's mount
// table ([mounts.Mounts]): the mount points of copy-on-write mounts
// ([mounts.Description.CopyOnWrite], a writable git mount with a memory
// upper) with no other mount below them.
func CopyOnWriteRoots(fsys mounts.FS) []string {
	return leafRoots(fsys, func(m mounts.MountInfo) bool { return m.CopyOnWrite && !m.External })
}

// leafRoots are the mount points, without their leading slash, of the
// mounts of fsys's table that keep accepts and that have no other mount
// below them (the root mount is never one).
func leafRoots(fsys mounts.FS, keep func(mounts.MountInfo) bool) []string {
	var roots []string
	table := mounts.Mounts(fsys)
	for _, m := range table {
		if !keep(m) || m.Prefix == "/" {
			continue
		}
		nested := slices.ContainsFunc(table, func(o mounts.MountInfo) bool { return strings.HasPrefix(o.Prefix, m.Prefix+"/") })
		if !nested {
			roots = append(roots, strings.TrimPrefix(m.Prefix, "/"))
		}
	}
	return roots
}

// NotifiedRoots returns the directories [Options.StackConnections] serves
// on connections of their own that open directories without asking, from
// fsys's mount table ([mounts.Mounts]): the mount points of mounts whose
// changes are told ([mounts.Description.Notified], a remote mount with
// its change stream) with no other mount below them.
func NotifiedRoots(fsys mounts.FS) []string {
	return leafRoots(fsys, func(m mounts.MountInfo) bool {
		return m.Notified && !m.External && !m.Immutable && !m.CopyOnWrite
	})
}

// stacking returns the kind of the main connection and the roots to stack
// on it once it is mounted: none without [Options.StackConnections]; with
// "." among the roots, the main connection is itself an immutable one.
func stacking(fsys mounts.FS, opts Options, sm seams, logger *slog.Logger) (connKind, []string) {
	if !opts.StackConnections {
		return kindMain, nil
	}
	all := sm.roots
	if all == nil {
		all = append(append(ImmutableRoots(fsys), CopyOnWriteRoots(fsys)...), NotifiedRoots(fsys)...)
	}
	kind := kindMain
	var roots []string
	for _, root := range all {
		switch {
		case root != ".":
			roots = append(roots, root)
		case mounts.Describe(fsys).Immutable:
			// Everything is immutable: the main connection is one.
			kind = kindImmutable
		default:
			logger.Warn("fusefs: the root is not immutable; files are opened the usual way")
		}
	}
	return kind, roots
}

// mountStacked mounts root's subtree, immutable or copy-on-write, on a
// connection of its own, on top of the directory the main connection shows
// there.
func (s *Server) mountStacked(root string, opts Options, sm seams) (*Server, error) {
	fsys := s.conn.fsys
	if !mounts.ValidPath(root) || root == "." {
		return nil, fmt.Errorf("not a directory name: %q", root)
	}
	d := mounts.DescribeAt(fsys, root)
	var kind connKind
	switch {
	case d.Immutable:
		kind = kindImmutable
	case d.External:
		return nil, errors.New("its content changes behind the process's back")
	case d.CopyOnWrite:
		kind = kindCopyOnWrite
	case d.Notified:
		kind = kindNotified
	default:
		return nil, errors.New("its content is neither immutable, copy-on-write nor notified")
	}
	parent, err := fsys.Stat(mountCtx(), path.Dir(root))
	if err != nil {
		return nil, err
	}
	for _, sub := range s.subs {
		if within(root, sub.conn.prefix) {
			return nil, fmt.Errorf("it is below %s, which has a connection of its own", sub.conn.prefix)
		}
	}
	c := newConn(fsys, kind, root, parent.Ino)
	// Stacked connections are openless (no handle to pass through), or
	// serve a mount with no host file to pass (a notified one).
	opts.Passthrough = false
	sub, err := mountConn(filepath.Join(s.mountpoint, filepath.FromSlash(root)), c, opts, nil, sm)
	if err != nil {
		c.readers.clear(false)
	}
	return sub, err
}

// gate holds the requests of other processes on the main connection until
// the workspace is whole (see "# Readiness" in the package doc).
type gate struct {
	// open is the fast path: once set, a request costs one load.
	open  atomic.Bool
	ready chan struct{}
	once  sync.Once
	pid   int
	// procOK says /proc shows this process under the pid the kernel
	// uses in request headers; without that, the gate cannot tell its
	// own requests from others' and stays open.
	procOK bool
	// held, when set (seams.held), is told of each request held.
	held func()
}

func newGate(held func()) *gate {
	g := &gate{ready: make(chan struct{}), pid: os.Getpid(), held: held}
	self, err := os.Readlink("/proc/self")
	g.procOK = err == nil && self == strconv.Itoa(g.pid)
	if !g.procOK {
		g.release()
	}
	return g
}

// release opens the gate for good: held requests go on, and replies carry
// their usual cache timeouts.
func (g *gate) release() {
	g.once.Do(func() {
		g.open.Store(true)
		close(g.ready)
	})
}

// pass waits, for a request of another process, until the gate opens. It
// returns EINTR when the kernel interrupts the request first (the caller
// got a signal, or the connection went away).
func (g *gate) pass(cancel <-chan struct{}, h *fuse.InHeader) fuse.Status {
	if g.open.Load() || g.ours(h.Caller.Pid) {
		return fuse.OK
	}
	if g.held != nil {
		g.held()
	}
	select {
	case <-g.ready:
		return fuse.OK
	case <-cancel:
		return fuse.EINTR
	}
}

// ours reports whether pid, the task id of a request's caller, is a thread
// of this process, or the fusermount3 (or fusermount) child that mounts a
// connection when mount(2) is not allowed, and walks the path to it
// through the main connection. Other children are not ours: they are what
// a program started by this process would run, and wait like any other.
// Pid 0 is a caller the kernel cannot name in our pid namespace (a process
// of another container): never ours.
func (g *gate) ours(pid uint32) bool {
	if pid == 0 {
		return false
	}
	if int(pid) == g.pid {
		return true
	}
	proc := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	if tgid, ppid, ok := procStatus(proc); ok {
		if tgid == g.pid {
			return true
		}
		if ppid != g.pid {
			return false
		}
		comm, err := os.ReadFile(proc + "/comm")
		name := string(bytes.TrimSpace(comm))
		return err == nil && (name == "fusermount3" || name == "fusermount")
	}
	// /proc may hide other users' processes (hidepid): a child of ours
	// we may not look at is the setuid fusermount3; it is found among the
	// children of our threads.
	return g.isChild(pid)
}

// procStatus reads the Tgid and PPid lines of the status file of proc, a
// /proc/PID directory (which exists for every thread, listed or not).
func procStatus(proc string) (tgid, ppid int, ok bool) {
	b, err := os.ReadFile(proc + "/status")
	if err != nil {
		return 0, 0, false
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() && found < 2 {
		k, v, _ := bytes.Cut(sc.Bytes(), []byte(":"))
		var dst *int
		switch string(k) {
		case "Tgid":
			dst = &tgid
		case "PPid":
			dst = &ppid
		default:
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil {
			return 0, 0, false
		}
		*dst = n
		found++
	}
	return tgid, ppid, found == 2
}

// isChild reports whether pid is listed in the children file of one of this
// process's threads.
func (g *gate) isChild(pid uint32) bool {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	want := []byte(strconv.FormatUint(uint64(pid), 10))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range bytes.Fields(b) {
			if bytes.Equal(field, want) {
				return true
			}
		}
	}
	return false
}

// gated is the main connection's request layer: every request that names
// a caller passes the gate first, and while the gate is closed the entries
// and attributes of replies (to this process: no other gets one) are not
// to be cached, so that no path walk of another process can later be
// answered by the kernel alone from what this process looked up while it
// mounted. It also answers StackedXattr on the root.
//
// FORGET, RELEASE and RELEASEDIR go straight through: they name no new
// access, and nobody else has a handle before the gate opens.
type gated struct {
	fuse.RawFileSystem
	g *gate
	// stacked is the value of StackedXattr, set by Mount.
	stacked atomic.Pointer[[]byte]
}

func newGated(raw fuse.RawFileSystem, g *gate) *gated {
	r := &gated{RawFileSystem: raw, g: g}
	r.setStacked(nil)
	return r
}

func (r *gated) setStacked(roots []string) {
	var b []byte
	for _, root := range roots {
		b = append(append(b, root...), '\n')
	}
	r.stacked.Store(&b)
}

// uncached drops the cache timeouts of an entry while the gate is closed.
func (r *gated) uncached(out *fuse.EntryOut) {
	if !r.g.open.Load() {
		out.SetEntryTimeout(0)
		out.SetAttrTimeout(0)
	}
}

// uncachedAttr drops the cache timeout of attributes while the gate is
// closed.
func (r *gated) uncachedAttr(out *fuse.AttrOut) {
	if !r.g.open.Load() {
		out.SetTimeout(0)
	}
}

// isStacked reports whether a request is for StackedXattr on the root.
func isStacked(h *fuse.InHeader, attr string) bool {
	return h.NodeId == fuse.FUSE_ROOT_ID && attr == StackedXattr
}

func (r *gated) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Lookup(cancel, h, name, out)
	r.uncached(out)
	return st
}

func (r *gated) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.GetAttr(cancel, in, out)
	r.uncachedAttr(out)
	return st
}

func (r *gated) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.SetAttr(cancel, in, out)
	r.uncachedAttr(out)
	return st
}

func (r *gated) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Statx(cancel, in, out)
	if !r.g.open.Load() {
		out.AttrValid, out.AttrValidNsec = 0, 0
	}
	return st
}

func (r *gated) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Mknod(cancel, in, name, out)
	r.uncached(out)
	return st
}

func (r *gated) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Mkdir(cancel, in, name, out)
	r.uncached(out)
	return st
}

func (r *gated) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Unlink(cancel, h, name)
}

func (r *gated) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rmdir(cancel, h, name)
}

func (r *gated) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r *gated) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Link(cancel, in, name, out)
	r.uncached(out)
	return st
}

func (r *gated) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Symlink(cancel, h, target, name, out)
	r.uncached(out)
	return st
}

func (r *gated) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Readlink(cancel, h)
}

func (r *gated) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Access(cancel, in)
}

func (r *gated) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return 0, st
	}
	if isStacked(h, attr) {
		v := *r.stacked.Load()
		if len(dest) == 0 {
			return uint32(len(v)), fuse.OK
		}
		if len(dest) < len(v) {
			return uint32(len(v)), fuse.ERANGE
		}
		return uint32(copy(dest, v)), fuse.OK
	}
	return r.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (r *gated) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (r *gated) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	if isStacked(&in.InHeader, attr) {
		return fuse.EPERM
	}
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (r *gated) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	if isStacked(h, attr) {
		return fuse.EPERM
	}
	return r.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (r *gated) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Create(cancel, in, name, out)
	r.uncached(&out.EntryOut)
	return st
}

func (r *gated) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Tmpfile(cancel, in, out)
	r.uncached(&out.EntryOut)
	return st
}

func (r *gated) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r *gated) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r *gated) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Lseek(cancel, in, out)
}

func (r *gated) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.GetLk(cancel, in, out)
}

func (r *gated) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLk(cancel, in)
}

func (r *gated) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLkw(cancel, in)
}

func (r *gated) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r *gated) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r *gated) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r *gated) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (r *gated) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *gated) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r *gated) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r *gated) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.OpenDir(cancel, in, out)
}

func (r *gated) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.ReadDir(cancel, in, out)
}

// ReadDirPlus passes the gate like the rest; the entries of a listing this
// process reads before the gate opens keep their timeouts (go-fuse writes
// them straight into the reply), which is harmless because Mount lists no
// directory of the workspace.
func (r *gated) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (r *gated) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if st := r.g.pass(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.FsyncDir(cancel, in)
}

func (r *gated) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if st := r.g.pass(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.StatFs(cancel, h, out)
}
