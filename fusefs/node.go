package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// node is every kind of inode: directory, file and symlink alike. The mount
// decides what a name is; the kernel only sends a node the requests that fit
// its type.
type node struct {
	gofs.Inode
	conn  *conn
	cache cachePolicy

	mu sync.Mutex
	// open holds the node's open handles, so fstat keeps working after
	// the last name is gone (unlink of an open file).
	open map[*handle]struct{}
	// ptOpen counts the handles of open that are passthrough ones (see
	// "# Passthrough" in the package doc): while there are any, every
	// new open must be one too, and while there are plain ones, none may.
	ptOpen int
	// last is what the mount last said about the node, answered (with
	// no links) when a stat races with the removal or replacement of its
	// last name, as a local file system answers for an unlinked inode.
	last mounts.Attr
	// served is set once a READ without a handle reached the node: its
	// content is in the kernel's page cache, or on its way there, and
	// the page store leaves it alone (see pageStore).
	served atomic.Bool
	// pushed is set while the page store hands the node's content to
	// the kernel, and stays set once it did.
	pushed atomic.Bool
	// listing is a directory's listing on a connection that keeps
	// listings (strategy.keepListings), kept once read. The stream hands out copies of its entries.
	listing []fuse.DirEntry
	// pinned is the file a node of a copy-on-write connection got when it
	// lost its last name (pinOrphan), also in open; wrote is set once it
	// was created, written or changed (SETATTR) through the connection:
	// an FSYNC without a handle has something to make durable, and
	// opening it for writing copies nothing up.
	pinned *handle
	wrote  atomic.Bool
	// changed is set when the node's content or name changed on a
	// copy-on-write connection (a write, a truncate, a rename, a library
	// change): pages offered of the commit's file are not its any more.
	changed atomic.Bool
}

// lastLinks is the link count the mount last reported for n.
func (n *node) lastLinks() uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last.Nlink
}

// lastSize is the size the mount last reported for n.
func (n *node) lastSize() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last.Size
}

var (
	_ = (gofs.InodeEmbedder)((*node)(nil))
	_ = (gofs.NodeLookuper)((*node)(nil))
	_ = (gofs.NodeGetattrer)((*node)(nil))
	_ = (gofs.NodeSetattrer)((*node)(nil))
	_ = (gofs.NodeReaddirer)((*node)(nil))
	_ = (gofs.NodeOpener)((*node)(nil))
	_ = (gofs.NodeCreater)((*node)(nil))
	_ = (gofs.NodeMkdirer)((*node)(nil))
	_ = (gofs.NodeRmdirer)((*node)(nil))
	_ = (gofs.NodeUnlinker)((*node)(nil))
	_ = (gofs.NodeRenamer)((*node)(nil))
	_ = (gofs.NodeSymlinker)((*node)(nil))
	_ = (gofs.NodeMknoder)((*node)(nil))
	_ = (gofs.NodeReadlinker)((*node)(nil))
	_ = (gofs.NodeLinker)((*node)(nil))
	_ = (gofs.NodeStatfser)((*node)(nil))
	_ = (gofs.NodeGetxattrer)((*node)(nil))
	_ = (gofs.NodeSetxattrer)((*node)(nil))
	_ = (gofs.NodeListxattrer)((*node)(nil))
	_ = (gofs.NodeRemovexattrer)((*node)(nil))
)

// name returns the node's fsys-relative name, computed from its position
// in the inode tree below the connection's root (conn.prefix). ok is false
// for a node that is in no directory any more (its last name was removed):
// it must not be addressed by a name, which by now may belong to another
// file.
func (n *node) name() (name string, ok bool) {
	var elems []string
	for cur := n.EmbeddedInode(); !cur.IsRoot(); {
		elem, parent := cur.Parent()
		if parent == nil {
			return "", false
		}
		elems = append(elems, elem)
		cur = parent
	}
	prefix := n.conn.prefix
	if len(elems) == 0 {
		return prefix, true
	}
	size := len(elems) - 1
	for _, e := range elems {
		size += len(e)
	}
	if prefix != "." {
		size += len(prefix) + 1
	}
	buf := make([]byte, 0, size)
	if prefix != "." {
		buf = append(buf, prefix...)
		buf = append(buf, '/')
	}
	for i := len(elems) - 1; i >= 0; i-- {
		buf = append(buf, elems[i]...)
		if i > 0 {
			buf = append(buf, '/')
		}
	}
	return string(buf), true
}

// child returns the name of the entry elem of directory n.
func (n *node) child(elem string) (string, syscall.Errno) {
	dir, ok := n.name()
	if !ok {
		return "", syscall.ENOENT
	}
	return mounts.Join(dir, elem), 0
}

// newChild makes (or finds, for a hard link) the inode for name with
// attributes a, and fills out.
func (n *node) newChild(ctx context.Context, name string, a mounts.Attr, out *fuse.EntryOut) *gofs.Inode {
	pol := n.conn.how.policy(n.conn, name)
	fillAttr(&out.Attr, a)
	out.SetEntryTimeout(pol.entry)
	out.SetAttrTimeout(pol.attr)
	ino := a.Ino
	if ino == ^uint64(0) {
		// Reserved by go-fuse; let it assign one instead.
		ino = 0
	}
	// Gen stays 1: numbers are unique for the life of the mount (the
	// contract), and node ids are go-fuse's, so the kernel never sees an
	// (ino, generation) pair reused for another file.
	ch := n.NewInode(ctx, &node{conn: n.conn, cache: pol},
		gofs.StableAttr{Mode: mounts.TypeBits(a.Mode), Ino: ino, Gen: 1})
	// With a hard link, ch is the existing node of the same number.
	ch.Operations().(*node).remember(a)
	return ch
}

func (n *node) remember(a mounts.Attr) {
	n.mu.Lock()
	n.last = a
	n.mu.Unlock()
}

// gone returns the attributes of a node with no name left: those of an
// open handle, or else the last ones known, with no links.
func (n *node) gone() (mounts.Attr, error) {
	if h := n.anyHandle(); h != nil {
		return h.f.Stat()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.last
	a.Nlink = 0
	return a, nil
}

// renamedOver reports whether a, stat'ed by n's name, belongs to another
// file: the name was replaced (a rename over it) and the kernel has not
// learnt yet that n lost it.
func (n *node) renamedOver(a mounts.Attr) bool {
	ino := n.StableAttr().Ino
	return a.Ino != 0 && a.Ino != ^uint64(0) && ino != a.Ino && !n.IsRoot()
}

// statChild stats a freshly created name and returns its inode.
func (n *node) statChild(ctx context.Context, op, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	a, err := n.conn.fsys.Stat(ctx, name)
	if err != nil {
		return nil, n.conn.errs.errno(op, err)
	}
	return n.newChild(ctx, name, a, out), 0
}

func (n *node) Lookup(ctx context.Context, elem string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	defer n.conn.rescue("lookup", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	a, err := n.conn.fsys.Stat(n.conn.ctx(ctx), name)
	if err != nil {
		errno := n.conn.errs.errno("lookup", err)
		if errno == syscall.ENOENT && n.cache.negative > 0 && (n != n.conn.root || n.conn.rootNegs.add(elem)) {
			// A cacheable miss (negEntries).
			out.SetEntryTimeout(n.cache.negative)
		}
		return nil, errno
	}
	return n.newChild(ctx, name, a, out), 0
}

func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) (errno syscall.Errno) {
	defer n.conn.rescue("getattr", &errno)
	var a mounts.Attr
	var err error
	h := asHandle(f)
	name, ok := n.name()
	switch {
	case h != nil && (!ok || writable(h.f)):
		a, err = h.f.Stat()
	case ok:
		// By name, also with a handle open to read: go-fuse hands over
		// any open handle when the kernel gave none (a stat(2)), and
		// one only reading may keep the attributes it opened with (a
		// remote file read whole), links since removed included.
		a, err = n.conn.fsys.Stat(n.conn.ctx(ctx), name)
		// The name may have gone behind the kernel's back (the tool
		// face removed or replaced it): an open file still answers.
		if (err == nil && n.renamedOver(a)) || (errors.Is(err, fs.ErrNotExist) && n.anyHandle() != nil) {
			ok = false
			a, err = n.gone()
		}
	default:
		a, err = n.gone()
	}
	if err != nil {
		return n.conn.errs.errno("getattr", err)
	}
	if ok {
		n.remember(a)
	}
	fillAttr(&out.Attr, a)
	if !ok && (a.Nlink == 0 || n.lastLinks() <= 1) {
		// No name left: a link count of 0 is the truth, not "unknown"
		// (fstat of an unlinked or overwritten open file), also when
		// the file says otherwise because it is one of a layer below
		// that never saw the removal (an overlay's commit).
		out.Nlink = 0
	}
	out.SetTimeout(n.cache.attr)
	return 0
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) (errno syscall.Errno) {
	defer n.conn.rescue("setattr", &errno)
	ctx = n.conn.ctx(ctx)
	h := asHandle(f)
	name, named := n.name()
	if !named && h == nil {
		// On an openless connection a file with no name left has
		// the file it was pinned with (pinOrphan).
		h = n.anyHandle()
	}
	if !named && h == nil {
		return syscall.ENOENT
	}
	// byName fails for a node without a name: only the size of an
	// unlinked open file can still change, through its handle.
	byName := func(op string, do func() error) syscall.Errno {
		if !named {
			return syscall.ENOENT
		}
		return n.conn.errs.errno(op, do())
	}
	if m, ok := in.GetMode(); ok {
		if errno := byName("chmod", func() error {
			return mounts.Chmod(ctx, n.conn.fsys, name, mounts.PermMode(m))
		}); errno != 0 {
			return errno
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if errno := byName("chown", func() error {
			return mounts.Chown(ctx, n.conn.fsys, name, u, g)
		}); errno != 0 {
			return errno
		}
	}
	// Truncate before setting times, so an explicit mtime is not
	// clobbered by the truncate.
	if size, ok := in.GetSize(); ok {
		if wf, isW := handleWriter(h); isW {
			if errno := n.conn.errs.errno("truncate", wf.Truncate(int64(size))); errno != 0 {
				return errno
			}
		} else if errno := byName("truncate", func() error {
			return mounts.Truncate(ctx, n.conn.fsys, name, int64(size))
		}); errno != 0 {
			return errno
		} else {
			// A cached read-only file of a commit's blob would not
			// show the copy-up.
			n.changed.Store(true)
			n.conn.readers.drop(n, true)
		}
	}
	atime, aok := in.GetATime() // UTIME_NOW arrives as time.Now()
	mtime, mok := in.GetMTime()
	if aok || mok {
		if errno := byName("chtimes", func() error {
			return mounts.Chtimes(ctx, n.conn.fsys, name, atime, mtime)
		}); errno != 0 {
			return errno
		}
	}
	n.wrote.Store(true)
	return n.Getattr(ctx, f, out)
}

func (n *node) Readdir(ctx context.Context) (ds gofs.DirStream, errno syscall.Errno) {
	defer n.conn.rescue("readdir", &errno)
	if n.conn.how.keepListings {
		// The listing is built once (each READDIR of a connection
		// without OPENDIR reads it afresh, see noOpendir).
		n.mu.Lock()
		list := n.listing
		n.mu.Unlock()
		if list != nil {
			return gofs.NewListDirStream(list), 0
		}
	}
	name, ok := n.name()
	if !ok {
		return nil, syscall.ENOENT
	}
	ents, err := n.conn.fsys.ReadDir(n.conn.ctx(ctx), name)
	if err != nil {
		return nil, n.conn.errs.errno("readdir", err)
	}
	return n.listFrom(ents), 0
}

// listFrom makes the stream of a listing (kept where
// strategy.keepListings says).
func (n *node) listFrom(ents []mounts.DirEntry) gofs.DirStream {
	// The contract has the mount return entries sorted, which keeps the
	// stream deterministic (go-fuse loses entries otherwise).
	// "." and ".." come first, as on a local file system (ls -a, and
	// programs that count them, expect them).
	list := make([]fuse.DirEntry, 0, len(ents)+2)
	self := n.StableAttr().Ino
	up := self
	if _, p := n.Parent(); p != nil {
		up = p.StableAttr().Ino
	} else if n.conn.parentIno != 0 {
		up = n.conn.parentIno
	}
	list = append(list,
		fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: self},
		fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: up})
	for _, e := range ents {
		list = append(list, fuse.DirEntry{Name: e.Name, Mode: mounts.TypeBits(e.Type), Ino: e.Ino})
	}
	if n.conn.how.keepListings {
		n.mu.Lock()
		n.listing = list
		n.mu.Unlock()
	}
	return gofs.NewListDirStream(list)
}

// openFlags keeps the open(2) flags the contract understands and drops the
// ones that are the kernel's business (O_CLOEXEC, O_LARGEFILE, O_NOCTTY,
// FMODE_EXEC, ...). O_APPEND passes through: the mount appends at the end
// whatever offset a WRITE carries.
func openFlags(flags uint32) int {
	return int(flags) & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC |
		os.O_CREATE | os.O_EXCL)
}

func (n *node) Open(ctx context.Context, flags uint32) (fh gofs.FileHandle, fuseFlags uint32, errno syscall.Errno) {
	defer n.conn.rescue("open", &errno)
	if n.conn.how.openless {
		// See "# Connections": the kernel takes ENOSYS as a success,
		// and never sends OPEN on this connection again.
		return nil, 0, syscall.ENOSYS
	}
	name, ok := n.name()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	octx := n.conn.ctx(ctx)
	flag := openFlags(flags) &^ (os.O_CREATE | os.O_EXCL)
	var f mounts.File
	var err error
	if n.cache.keepCache && !mounts.WantsWrite(flag) {
		// Read only, with FOPEN_KEEP_CACHE (below): the kernel keeps
		// the pages read through this open for the next.
		f, err = mounts.OpenWith(octx, n.conn.fsys, name, mounts.OpenOptions{PagesKept: true})
	} else {
		f, err = mounts.OpenFile(octx, n.conn.fsys, name, flag, 0)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// The kernel's cached entry outlived the name, removed behind
		// its back (a host directory edited directly, a library change
		// not yet invalidated). ESTALE makes the VFS look the name up
		// again and retry once: an O_CREAT open then creates the file,
		// any other fails with ENOENT, as on a local file system.
		return nil, 0, syscall.ESTALE
	}
	if err != nil {
		return nil, 0, n.conn.errs.errno("open", err)
	}
	if n.cache.keepCache {
		// Immutable content: the pages read through one open stay
		// valid for the next, so the kernel need not drop them.
		fuseFlags |= fuse.FOPEN_KEEP_CACHE
	}
	return n.addHandle(f), fuseFlags, 0
}

func (n *node) Create(ctx context.Context, elem string, flags uint32, mode uint32, out *fuse.EntryOut) (ch *gofs.Inode, fh gofs.FileHandle, fuseFlags uint32, errno syscall.Errno) {
	defer n.conn.rescue("create", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	f, err := mounts.OpenFile(n.conn.ctx(ctx), n.conn.fsys, name, openFlags(flags)|os.O_CREATE, mounts.PermMode(mode))
	if err != nil {
		return nil, nil, 0, n.conn.errs.errno("create", err)
	}
	a, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, n.conn.errs.errno("create", err)
	}
	ch = n.newChild(ctx, name, a, out)
	// With a hard link the inode may be an existing node, not the one
	// newChild made: the handle belongs to whichever it is.
	cn := ch.Operations().(*node)
	cn.wrote.Store(true)
	if n.conn.how.writesByName {
		// The kernel sends no RELEASE for a handle on a connection
		// whose OPEN answers ENOSYS: the file would stay open for
		// the life of the node. Its WRITEs go by name, through the
		// file cache, which starts with the file just created.
		return ch, nil, 0, n.conn.errs.errno("create", cn.cacheCreated(f, flags))
	}
	return ch, cn.addHandle(f), 0, 0
}

// cacheCreated puts f, just created with the open flags, in the file
// cache of n's connection when it was opened for writing, and closes it
// otherwise.
func (n *node) cacheCreated(f mounts.File, flags uint32) error {
	if !writable(f) || flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return f.Close()
	}
	readable := flags&syscall.O_ACCMODE == syscall.O_RDWR
	r, err := n.conn.readers.get(n, true, func(bool) (mounts.File, bool, error) { return f, readable, nil })
	if err != nil {
		return err
	}
	n.conn.readers.put(r)
	return nil
}

func (n *node) Mkdir(ctx context.Context, elem string, mode uint32, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	defer n.conn.rescue("mkdir", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	ctx = n.conn.ctx(ctx)
	if err := mounts.Mkdir(ctx, n.conn.fsys, name, mounts.PermMode(mode)); err != nil {
		return nil, n.conn.errs.errno("mkdir", err)
	}
	return n.statChild(ctx, "mkdir", name, out)
}

func (n *node) Rmdir(ctx context.Context, elem string) (errno syscall.Errno) {
	defer n.conn.rescue("rmdir", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return errno
	}
	return n.conn.errs.errno("rmdir", mounts.Rmdir(n.conn.ctx(ctx), n.conn.fsys, name))
}

func (n *node) Unlink(ctx context.Context, elem string) (errno syscall.Errno) {
	defer n.conn.rescue("unlink", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return errno
	}
	undo := n.pinChild(ctx, elem)
	err := mounts.Unlink(n.conn.ctx(ctx), n.conn.fsys, name)
	if err != nil {
		undo()
	}
	return n.conn.errs.errno("unlink", err)
}

// renameFlags translates renameat2(2) flags. RENAME_WHITEOUT (overlayfs
// only) and unknown bits are refused, as the kernel refuses flags a file
// system lacks.
func renameFlags(flags uint32) (mounts.RenameFlags, bool) {
	var rf mounts.RenameFlags
	if flags&unix.RENAME_NOREPLACE != 0 {
		rf |= mounts.RenameNoReplace
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		rf |= mounts.RenameExchange
	}
	return rf, flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) == 0
}

func (n *node) Rename(ctx context.Context, elem string, newParent gofs.InodeEmbedder, newElem string, flags uint32) (errno syscall.Errno) {
	defer n.conn.rescue("rename", &errno)
	rf, ok := renameFlags(flags)
	if !ok {
		return syscall.EINVAL
	}
	np, ok := newParent.(*node)
	if !ok {
		// Every inode of the tree is a *node; anything else is not
		// ours to rename into.
		return syscall.EXDEV
	}
	oldName, errno := n.child(elem)
	if errno != 0 {
		return errno
	}
	newName, errno := np.child(newElem)
	if errno != 0 {
		return errno
	}
	undo := func() {}
	if rf&mounts.RenameExchange == 0 {
		undo = np.pinChild(ctx, newElem)
	}
	for _, ch := range []*gofs.Inode{n.GetChild(elem), np.GetChild(newElem)} {
		if cn, ok := nodeOf(ch); ok {
			cn.changed.Store(true)
		}
	}
	err := mounts.Rename(n.conn.ctx(ctx), n.conn.fsys, oldName, newName, rf)
	if err != nil {
		undo()
	}
	return n.conn.errs.errno("rename", err)
}

func (n *node) Symlink(ctx context.Context, target, elem string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	defer n.conn.rescue("symlink", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	ctx = n.conn.ctx(ctx)
	if err := mounts.Symlink(ctx, n.conn.fsys, target, name); err != nil {
		return nil, n.conn.errs.errno("symlink", err)
	}
	return n.statChild(ctx, "symlink", name, out)
}

// Mknod creates a FIFO, a socket (bind(2) of a unix socket), a device or,
// from mknod(2) of a regular file, an empty file. The kernel checked
// CAP_MKNOD for a device before it asked; it opens special files itself,
// so they never reach Open here.
func (n *node) Mknod(ctx context.Context, elem string, mode uint32, dev uint32, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	defer n.conn.rescue("mknod", &errno)
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	ctx = n.conn.ctx(ctx)
	if err := mounts.Mknod(ctx, n.conn.fsys, name, mounts.FileModeOf(mode), dev); err != nil {
		return nil, n.conn.errs.errno("mknod", err)
	}
	return n.statChild(ctx, "mknod", name, out)
}

func (n *node) Readlink(ctx context.Context) (target []byte, errno syscall.Errno) {
	defer n.conn.rescue("readlink", &errno)
	name, ok := n.name()
	if !ok {
		return nil, syscall.ENOENT
	}
	s, err := n.conn.fsys.ReadLink(n.conn.ctx(ctx), name)
	if err != nil {
		return nil, n.conn.errs.errno("readlink", err)
	}
	return []byte(s), 0
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, elem string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	defer n.conn.rescue("link", &errno)
	tn, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	oldName, ok := tn.name()
	if !ok {
		// A file with no name left (unlinked, or O_TMPFILE) cannot be
		// linked by name.
		return nil, syscall.ENOENT
	}
	name, errno := n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	ctx = n.conn.ctx(ctx)
	if err := mounts.Link(ctx, n.conn.fsys, oldName, name); err != nil {
		return nil, n.conn.errs.errno("link", err)
	}
	// Same number, so go-fuse hands back the target's inode.
	return n.statChild(ctx, "link", name, out)
}

// statfsNameLen is reported when the mount says nothing.
const statfsNameLen = mounts.MaxNameLen

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) (errno syscall.Errno) {
	defer n.conn.rescue("statfs", &errno)
	st, err := mounts.StatFS(n.conn.ctx(ctx), n.conn.fsys)
	if err != nil && !errorIsNotSupported(err) {
		return n.conn.errs.errno("statfs", err)
	}
	// Without StatFSer: zeros, which df shows as an empty file system.
	*out = fuse.StatfsOut{
		Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree,
		Bsize: st.Bsize, Frsize: st.Bsize, NameLen: st.NameLen,
	}
	if out.Bsize == 0 {
		out.Bsize, out.Frsize = blockSize, blockSize
	}
	if out.NameLen == 0 {
		out.NameLen = statfsNameLen
	}
	return 0
}

func errorIsNotSupported(err error) bool {
	return ToErrno(err) == syscall.ENOTSUP
}

// xattrOut answers a getxattr/listxattr buffer: the size alone for a size
// query (empty dest), ERANGE when dest is too small.
func xattrOut(data, dest []byte) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return uint32(len(data)), 0
	}
	if len(dest) < len(data) {
		return uint32(len(data)), syscall.ERANGE
	}
	return uint32(copy(dest, data)), 0
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (size uint32, errno syscall.Errno) {
	defer n.conn.rescue("getxattr", &errno)
	name, ok := n.name()
	if !ok {
		return 0, syscall.ENOENT
	}
	data, err := mounts.GetXattr(n.conn.ctx(ctx), n.conn.fsys, name, attr)
	if err != nil {
		return 0, n.conn.errs.errno("getxattr", err)
	}
	return xattrOut(data, dest)
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (size uint32, errno syscall.Errno) {
	defer n.conn.rescue("listxattr", &errno)
	name, ok := n.name()
	if !ok {
		return 0, syscall.ENOENT
	}
	attrs, err := mounts.ListXattr(n.conn.ctx(ctx), n.conn.fsys, name)
	if err != nil {
		return 0, n.conn.errs.errno("listxattr", err)
	}
	var data []byte
	for _, a := range attrs {
		data = append(append(data, a...), 0)
	}
	return xattrOut(data, dest)
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) (errno syscall.Errno) {
	defer n.conn.rescue("setxattr", &errno)
	name, ok := n.name()
	if !ok {
		return syscall.ENOENT
	}
	// XATTR_CREATE and XATTR_REPLACE have the same values in the
	// contract as in setxattr(2). The data buffer is reused by go-fuse
	// after the request, so the mount gets a copy.
	err := mounts.SetXattr(n.conn.ctx(ctx), n.conn.fsys, name, attr, append([]byte(nil), data...), int(flags))
	return n.conn.errs.errno("setxattr", err)
}

func (n *node) Removexattr(ctx context.Context, attr string) (errno syscall.Errno) {
	defer n.conn.rescue("removexattr", &errno)
	name, ok := n.name()
	if !ok {
		return syscall.ENOENT
	}
	return n.conn.errs.errno("removexattr", mounts.RemoveXattr(n.conn.ctx(ctx), n.conn.fsys, name, attr))
}

// dirHandle is an open directory. Its listing is read lazily, at the first
// READDIR, as go-fuse's own handle does; it exists so OPENDIR can ask the
// kernel to cache listings (FOPEN_CACHE_DIR) for mounts whose changes the
// kernel hears about (see "# Caching").
type dirHandle struct {
	n  *node
	ds gofs.DirStream
	// ents and attrs are the listing and its entries' attributes when it
	// came with them (mounts.StatDirFS on an openless connection):
	// READDIRPLUS then answers its lookups from here, by a search of the
	// sorted entries, instead of a Stat per entry.
	ents  []mounts.DirEntry
	attrs []mounts.Attr
}

var (
	_ = (gofs.NodeOpendirHandler)((*node)(nil))
	_ = (gofs.FileReaddirenter)((*dirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*dirHandle)(nil))
	_ = (gofs.FileReleasedirer)((*dirHandle)(nil))
	_ = (gofs.FileFsyncdirer)((*dirHandle)(nil))
	_ = (gofs.FileLookuper)((*dirHandle)(nil))
)

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fh gofs.FileHandle, fuseFlags uint32, errno syscall.Errno) {
	defer n.conn.rescue("opendir", &errno)
	if n.cache.cacheDir {
		// The kernel checks a cached listing against the directory's
		// mtime on every rewind, and Invalidate drops it for changes
		// made through the library.
		fuseFlags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return &dirHandle{n: n}, fuseFlags, 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if d.ds == nil {
		ds, errno := d.open(ctx)
		if errno != 0 {
			return nil, errno
		}
		d.ds = ds
	}
	if !d.ds.HasNext() {
		return nil, 0
	}
	e, errno := d.ds.Next()
	return &e, errno
}

// open starts the listing: with the entries' attributes on a connection
// that opens directories without asking (an openless or a notified one:
// each READDIR comes with a handle of its own) whose tree can list them
// so, the node's own listing otherwise.
// (A copy-on-write connection keeps no listing: each READDIR lists anew.)
func (d *dirHandle) open(ctx context.Context) (ds gofs.DirStream, errno syscall.Errno) {
	n := d.n
	sd, ok := n.conn.fsys.(mounts.StatDirFS)
	if !ok || !n.conn.how.openless {
		return n.Readdir(ctx)
	}
	n.mu.Lock()
	listed := n.listing != nil
	n.mu.Unlock()
	if listed {
		// A request after the one that built the listing (the one
		// that finds its end, say): the kernel took in the entries.
		n.conn.pages.Load().listed(n)
		return n.Readdir(ctx)
	}
	defer n.conn.rescue("readdir", &errno)
	name, ok := n.name()
	if !ok {
		return nil, syscall.ENOENT
	}
	ents, attrs, err := sd.StatDir(n.conn.ctx(ctx), name)
	if err != nil {
		// One entry that cannot be stat'ed (a git blob gone missing)
		// fails the whole StatDir; listed plainly, the directory
		// answers, and READDIRPLUS looks its entries up one by one,
		// so only that entry fails.
		return n.Readdir(ctx)
	}
	if len(attrs) == len(ents) {
		d.ents, d.attrs = ents, attrs
	}
	return n.listFrom(ents), 0
}

// Lookup answers the lookups of READDIRPLUS from the attributes the
// listing came with, and asks the mount otherwise.
func (d *dirHandle) Lookup(ctx context.Context, elem string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	i, ok := slices.BinarySearchFunc(d.ents, elem, func(e mounts.DirEntry, name string) int {
		return strings.Compare(e.Name, name)
	})
	if !ok {
		return d.n.Lookup(ctx, elem, out)
	}
	a := d.attrs[i]
	defer d.n.conn.rescue("lookup", &errno)
	name, errno := d.n.child(elem)
	if errno != 0 {
		return nil, errno
	}
	return d.n.newChild(ctx, name, a, out), 0
}

// Seekdir to 0 (rewinddir) reads the directory afresh; other offsets are
// the stream's own.
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		if d.ds != nil {
			d.ds.Close()
		}
		d.ds = nil
		return 0
	}
	if d.ds == nil {
		ds, errno := d.n.Readdir(ctx)
		if errno != 0 {
			return errno
		}
		d.ds = ds
	}
	if sd, ok := d.ds.(gofs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

// Fsyncdir makes the directory durable where its mount can (git, SQLite
// and rsync fsync directories after renames); elsewhere it succeeds, as on
// tmpfs.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) (errno syscall.Errno) {
	defer d.n.conn.rescue("fsyncdir", &errno)
	name, ok := d.n.name()
	if !ok {
		return 0 // the directory is gone: nothing left to make durable
	}
	if err := mounts.Sync(d.n.conn.ctx(ctx), d.n.conn.fsys, name); err != nil {
		return d.n.conn.errs.errno("fsyncdir", err)
	}
	return 0
}

func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	if d.ds != nil {
		d.ds.Close()
	}
}

// writable reports whether f is open for writing: its own attributes
// (a size its writes changed) are then the newest.
func writable(f mounts.File) bool {
	_, ok := f.(mounts.WritableFile)
	return ok
}
