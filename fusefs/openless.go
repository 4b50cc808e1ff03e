package fusefs

import (
	"container/list"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

// This file is what the two openless kinds of connection share
// (strategy.openless; see "# Connections" in the package doc): the kernel
// opens and closes files and directories without asking, so READ, WRITE
// and FSYNC arrive without a handle and go through the connection's file
// cache (readerCache), READDIR without one through a handle opened for the
// request (noOpendir), and a file unlinked while the kernel may hold it
// open keeps a file of its own until the kernel forgets it (pinOrphan).

// noOpendir lets the kernel open the directories of an openless
// connection without asking, as it opens the files (see "# Connections"
// in the package doc): OPENDIR answers ENOSYS, after which the
// kernel sends no OPENDIR or RELEASEDIR on the connection again, caches
// listings as if every open had asked for FOPEN_CACHE_DIR, and reads
// directories with no handle. go-fuse's node layer lists a directory only
// through a handle, so a handle-less READDIR(PLUS) is served through one
// opened for that request alone and positioned at the request's offset
// (the listing of an immutable directory is the same every time).
type noOpendir struct {
	fuse.RawFileSystem
}

func (r noOpendir) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

func (r noOpendir) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.withHandle(cancel, in, func(in *fuse.ReadIn) fuse.Status {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	})
}

func (r noOpendir) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.withHandle(cancel, in, func(in *fuse.ReadIn) fuse.Status {
		return r.RawFileSystem.ReadDirPlus(cancel, in, out)
	})
}

// withHandle runs read with a handle of the directory in.NodeId, opened for
// it when the request has none.
func (r noOpendir) withHandle(cancel <-chan struct{}, in *fuse.ReadIn, read func(*fuse.ReadIn) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return read(in)
	}
	open := fuse.OpenIn{InHeader: in.InHeader, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}
	var opened fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &open, &opened); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in.InHeader, Fh: opened.Fh})
	with := *in
	with.Fh = opened.Fh
	return read(&with)
}

// readNoHandle serves a READ without a handle, which only an openless
// connection gets: through the connection's file cache, or the file a node
// with no name left was pinned with.
func (n *node) readNoHandle(ctx context.Context, dest []byte, off int64) (res fuse.ReadResult, errno syscall.Errno) {
	defer n.conn.rescue("read", &errno)
	n.served.Store(true)
	n.conn.pages.Load().known(n)
	if _, named := n.name(); !named {
		if h := n.anyHandle(); h != nil {
			return h.Read(ctx, dest, off)
		}
		return nil, syscall.ENOENT
	}
	r, err := n.conn.readers.get(n, false, n.opener(ctx, mounts.OpenOptions{}))
	if err != nil {
		return nil, n.conn.errs.errno("read", err)
	}
	defer n.conn.readers.put(r)
	k, err := r.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, n.conn.errs.errno("read", err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// writeNoHandle serves a WRITE without a handle (a copy-on-write
// connection): through a file of the cache opened for writing, which the
// first write to a file of the commit copies up.
func (n *node) writeNoHandle(ctx context.Context, data []byte, off int64) (written uint32, errno syscall.Errno) {
	defer n.conn.rescue("write", &errno)
	if _, named := n.name(); !named {
		if h := n.anyHandle(); h != nil {
			return h.Write(ctx, data, off)
		}
		return 0, syscall.ENOENT
	}
	r, err := n.conn.readers.get(n, true, n.opener(ctx, mounts.OpenOptions{}))
	if err != nil {
		return 0, n.conn.errs.errno("write", err)
	}
	defer n.conn.readers.put(r)
	n.wrote.Store(true)
	n.changed.Store(true)
	k, err := r.f.(mounts.WritableFile).WriteAt(data, off)
	if err != nil && k == 0 {
		return 0, n.conn.errs.errno("write", err)
	}
	return uint32(k), 0
}

// fsyncNoHandle serves an FSYNC without a handle: through the cached file
// written last, or one opened for the purpose when that has left the cache.
// A file never changed through this connection (wrote) has nothing to make
// durable, and is not opened for writing, which would copy it up.
func (n *node) fsyncNoHandle(ctx context.Context) (errno syscall.Errno) {
	defer n.conn.rescue("fsync", &errno)
	if !n.wrote.Load() {
		return 0
	}
	if _, named := n.name(); !named {
		if wf, ok := handleWriter(n.anyHandle()); ok {
			return n.conn.errs.errno("fsync", wf.Sync())
		}
		return 0
	}
	r, err := n.conn.readers.get(n, true, n.opener(ctx, mounts.OpenOptions{}))
	if err != nil {
		return n.conn.errs.errno("fsync", err)
	}
	defer n.conn.readers.put(r)
	return n.conn.errs.errno("fsync", r.f.(mounts.WritableFile).Sync())
}

// opener returns the function the file cache opens n with, by its name:
// read-only, with the options o and the pages kept (the kernel keeps what
// it reads here across opens, so the mount need not keep the content after
// the file leaves the cache), or for reading and writing (for writing only
// when the mount refuses reading), which takes no options: a file written
// through this connection is the upper's, not the commit's they are for.
func (n *node) opener(ctx context.Context, o mounts.OpenOptions) func(write bool) (mounts.File, bool, error) {
	return n.openerAs(n.conn.ctx(ctx), o)
}

// openerAs is opener with the tree's context octx (whose call it is).
func (n *node) openerAs(octx context.Context, o mounts.OpenOptions) func(write bool) (mounts.File, bool, error) {
	return func(write bool) (mounts.File, bool, error) {
		name, ok := n.name()
		if !ok {
			return nil, false, mounts.PathErr("open", ".", syscall.ENOENT)
		}
		if !write {
			o.PagesKept = true
			f, err := mounts.OpenWith(octx, n.conn.fsys, name, o)
			return f, true, err
		}
		f, err := mounts.OpenFile(octx, n.conn.fsys, name, os.O_RDWR, 0)
		if !errors.Is(err, fs.ErrPermission) {
			return f, true, err
		}
		f, err = mounts.OpenFile(octx, n.conn.fsys, name, os.O_WRONLY, 0)
		return f, false, err
	}
}

// pinOrphan gives regular file n, about to lose its last name through
// op (an UNLINK, or a RENAME over it), a file of its own: the kernel opens
// files without telling us, so one may be open, and it must still read
// (and, when it was written through this connection, write) once no name
// leads to it. The file goes with the kernel's FORGET, which comes after
// the last close. It returns undo, for when op fails.
func (n *node) pinOrphan(ctx context.Context) (undo func()) {
	if !n.conn.how.writesByName || n.StableAttr().Mode&syscall.S_IFMT != syscall.S_IFREG {
		return func() {}
	}
	n.mu.Lock()
	links, pinned := n.last.Nlink, n.pinned != nil
	n.mu.Unlock()
	if pinned || links > 1 {
		return func() {}
	}
	// The file the cache holds, when it can do what the kernel may
	// ask: no second open (of a remote file, a round trip).
	f := n.conn.readers.take(n, n.wrote.Load())
	if f == nil {
		// Most such files are never read again (rm -r of a
		// checkout): a git mount decodes the blob only if one is.
		// The open is the kernel face's own: a policy that refuses
		// it is no refusal of the program that renamed or removed
		// the file.
		var err error
		f, _, err = n.openerAs(n.conn.ownCtx(ctx), mounts.OpenOptions{InCase: true})(n.wrote.Load())
		if err != nil {
			return func() {}
		}
	}
	h := &handle{n: n, f: f}
	n.mu.Lock()
	if n.open == nil {
		n.open = make(map[*handle]struct{})
	}
	n.open[h] = struct{}{}
	n.pinned = h
	n.mu.Unlock()
	return n.unpin
}

// pinChild pins the file directory n knows as elem, if any (pinOrphan).
func (n *node) pinChild(ctx context.Context, elem string) (undo func()) {
	if !n.conn.how.writesByName {
		return func() {}
	}
	cn, ok := nodeOf(n.GetChild(elem))
	if !ok {
		return func() {}
	}
	return cn.pinOrphan(ctx)
}

// nodeOf returns the node of in, if in is one.
func nodeOf(in *gofs.Inode) (*node, bool) {
	if in == nil {
		return nil, false
	}
	n, ok := in.Operations().(*node)
	return n, ok
}

// unpin closes the file pinOrphan gave n, if any.
func (n *node) unpin() {
	n.mu.Lock()
	h := n.pinned
	if h != nil {
		delete(n.open, h)
		n.pinned = nil
	}
	n.mu.Unlock()
	if h != nil {
		h.f.Close()
	}
}

// readerCache holds the files that handle-less READs, WRITEs and FSYNCs go
// through, one per node, for the nodes used most recently. Opening the
// file for every request would cost a name walk each time and, for a blob
// larger than the git mount's content cache, a decode each time; keeping
// every node's file open would pin every blob ever read. A few dozen open
// files cover the files programs use at once, and a large file read or
// written in many requests keeps its one file meanwhile.
type readerCache struct {
	max int

	mu sync.Mutex
	ll list.List // of *reader, most recently used at the front
	m  map[*node]*list.Element
}

// reader is one cached open file. refs counts the requests using it; an
// evicted reader is closed by the last of them. write says it was opened
// for writing, read that it can be read (a file the mount would open for
// writing only cannot).
type reader struct {
	n           *node
	f           mounts.File
	read, write bool
	refs        int
	evicted     bool
}

// maxReaders bounds the reader cache.
const maxReaders = 64

func newReaderCache(max int) *readerCache {
	return &readerCache{max: max, m: make(map[*node]*list.Element)}
}

// get returns n's file, for writing when write is set, opening one with
// open on a miss. A cached file that cannot do what is asked is replaced:
// by one opened for writing at a write after reads (the read-only file of
// a commit's blob would not see the copy-up), by one opened for reading at
// a read after writes through a file the mount would open for writing
// only. Two requests
// missing at once may both open; the second file is kept and the first
// closed when its request is done.
func (c *readerCache) get(n *node, write bool, open func(write bool) (f mounts.File, readable bool, err error)) (*reader, error) {
	c.mu.Lock()
	if el, ok := c.m[n]; ok {
		r := el.Value.(*reader)
		if (write && r.write) || (!write && r.read) {
			r.refs++
			c.ll.MoveToFront(el)
			c.mu.Unlock()
			return r, nil
		}
	}
	c.mu.Unlock()

	f, readable, err := open(write)
	if err != nil {
		return nil, err
	}
	if write && !writable(f) {
		f.Close()
		return nil, mounts.PathErr("write", ".", syscall.EBADF)
	}
	r := &reader{n: n, f: f, read: readable, write: write, refs: 1}
	var closeNow []*reader
	c.mu.Lock()
	if el, ok := c.m[n]; ok {
		closeNow = append(closeNow, c.evictLocked(el))
	}
	c.m[n] = c.ll.PushFront(r)
	for c.ll.Len() > c.max {
		closeNow = append(closeNow, c.evictLocked(c.ll.Back()))
	}
	c.mu.Unlock()
	closeAll(closeNow)
	return r, nil
}

// put ends one request's use of r.
func (c *readerCache) put(r *reader) {
	c.mu.Lock()
	r.refs--
	last := r.evicted && r.refs == 0
	c.mu.Unlock()
	if last {
		r.f.Close()
	}
}

// take removes n's file from the cache and hands it to the caller, who
// closes it, if it is there, readable, and writable when write is set;
// a request using it meanwhile goes on with it.
func (c *readerCache) take(n *node, write bool) mounts.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[n]
	if !ok {
		return nil
	}
	r := el.Value.(*reader)
	if !r.read || write && !r.write {
		return nil
	}
	c.ll.Remove(el)
	delete(c.m, n)
	return r.f
}

// drop evicts n's file, if any; with readOnly, only one opened
// read-only (its content changed by name, a truncate, which such a file
// of the commit's blob would not show; or a writer stays, see
// strategy.writersStay).
func (c *readerCache) drop(n *node, readOnly bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	var closeNow []*reader
	if el, ok := c.m[n]; ok && !(readOnly && el.Value.(*reader).write) {
		closeNow = append(closeNow, c.evictLocked(el))
	}
	c.mu.Unlock()
	closeAll(closeNow)
}

// clear closes every file nothing uses (the others are closed by the last
// request using them): once the connection is gone, or when a whole
// directory changed behind the kernel's back. With readOnly, only the
// files opened read-only go.
func (c *readerCache) clear(readOnly bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	var closeNow []*reader
	for el := c.ll.Front(); el != nil; {
		next := el.Next()
		if !(readOnly && el.Value.(*reader).write) {
			closeNow = append(closeNow, c.evictLocked(el))
		}
		el = next
	}
	c.mu.Unlock()
	closeAll(closeNow)
}

// evictLocked removes el and returns its reader when nothing uses it any
// more (the caller closes it, outside the lock), nil otherwise.
func (c *readerCache) evictLocked(el *list.Element) *reader {
	r := c.ll.Remove(el).(*reader)
	if c.m[r.n] == el {
		delete(c.m, r.n)
	}
	r.evicted = true
	if r.refs > 0 {
		return nil
	}
	return r
}

// closeAll closes the files of rs, skipping nils. What a written file has
// to report it reported at its WRITEs and FSYNCs.
func closeAll(rs []*reader) {
	for _, r := range rs {
		if r != nil {
			r.f.Close()
		}
	}
}
