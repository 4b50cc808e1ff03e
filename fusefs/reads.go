package fusefs

import (
	"container/list"
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsmount/vfsmount/mounts"
)

var (
	_ = (gofs.NodeReader)((*node)(nil))
	_ = (gofs.NodeFlusher)((*node)(nil))
	_ = (gofs.NodeFsyncer)((*node)(nil))
	_ = (gofs.NodeOnForgetter)((*node)(nil))
)

// Read serves READ. A request with a handle reads through it; one without
// comes from a connection where the kernel opens files itself (see "#
// Immutable mounts" in the package doc) and reads through the connection's
// reader cache.
func (n *node) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (res fuse.ReadResult, errno syscall.Errno) {
	if h := asHandle(f); h != nil {
		return h.Read(ctx, dest, off)
	}
	defer n.conn.rescue("read", &errno)
	r, err := n.conn.readers.get(n, func() (mounts.File, error) {
		name, ok := n.name()
		if !ok {
			return nil, mounts.PathErr("read", ".", syscall.ENOENT)
		}
		return n.conn.fsys.Open(n.conn.ctx(ctx), name)
	})
	if err != nil {
		return nil, n.conn.errs.errno("read", err)
	}
	defer n.conn.readers.put(r)
	k, err := r.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, n.conn.errs.errno("read", err)
	}
	if off == 0 {
		n.conn.ra.read(n)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH again on
// this connection: writes reach the mount when they are made, so close(2)
// has nothing to push, and every close saves a round trip. Closing the
// mount's file (for the audit log's coalesced write line) happens at
// RELEASE.
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// Fsync syncs through the handle; a file opened without one (immutable
// content) has nothing to make durable.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h := asHandle(f); h != nil {
		return h.Fsync(ctx, flags)
	}
	return 0
}

// OnForget drops the node's cached reader when the kernel forgets it.
func (n *node) OnForget() {
	if n.conn.readers != nil {
		n.conn.readers.drop(n)
	}
}

// readerCache holds the files that handle-less READs go through, one per
// node, for the nodes read most recently. Opening the file for every READ
// would cost a name walk each time and, for a blob larger than the git
// mount's content cache, a decode each time; keeping every node's file
// open would pin every blob ever read. A few dozen open files cover the
// files programs read at once, and a large file read in many READs keeps
// its one file while it is read.
type readerCache struct {
	max int

	mu sync.Mutex
	ll list.List // of *reader, most recently used at the front
	m  map[*node]*list.Element
}

// reader is one cached open file. refs counts the READs using it; an
// evicted reader is closed by the last of them.
type reader struct {
	n       *node
	f       mounts.File
	refs    int
	evicted bool
}

// maxReaders bounds the reader cache.
const maxReaders = 64

func newReaderCache(max int) *readerCache {
	return &readerCache{max: max, m: make(map[*node]*list.Element)}
}

// get returns n's reader, opening the file with open on a miss. Two READs
// missing at once may both open; the second file is kept and the first
// closed when its READ is done.
func (c *readerCache) get(n *node, open func() (mounts.File, error)) (*reader, error) {
	c.mu.Lock()
	if el, ok := c.m[n]; ok {
		r := el.Value.(*reader)
		r.refs++
		c.ll.MoveToFront(el)
		c.mu.Unlock()
		return r, nil
	}
	c.mu.Unlock()

	f, err := open()
	if err != nil {
		return nil, err
	}
	r := &reader{n: n, f: f, refs: 1}
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

// put ends one READ's use of r.
func (c *readerCache) put(r *reader) {
	c.mu.Lock()
	r.refs--
	last := r.evicted && r.refs == 0
	c.mu.Unlock()
	if last {
		r.f.Close()
	}
}

// drop evicts n's reader, if any.
func (c *readerCache) drop(n *node) {
	c.mu.Lock()
	var closeNow []*reader
	if el, ok := c.m[n]; ok {
		closeNow = append(closeNow, c.evictLocked(el))
	}
	c.mu.Unlock()
	closeAll(closeNow)
}

// clear closes every reader nothing uses, once the connection is gone.
func (c *readerCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	var closeNow []*reader
	for c.ll.Len() > 0 {
		closeNow = append(closeNow, c.evictLocked(c.ll.Back()))
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

// closeAll closes the files of rs, skipping nils. A read-only file's Close
// has nothing to report.
func closeAll(rs []*reader) {
	for _, r := range rs {
		if r != nil {
			r.f.Close()
		}
	}
}
