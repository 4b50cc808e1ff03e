package fusefs

import (
	"bytes"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

// This file is the page store, which hands the kernel the files a mount
// decoded ahead of their reads (see "# Read-ahead: the page store" in the
// package doc).

// pageStore is the "store these pages" hook: the sink the main connection
// registers with its tree ([mounts.PageOfferer]) once every connection is
// mounted. A mount that reads ahead (a git mount during a scan) offers
// whole files; the store hands each to the kernel with NOTIFY_STORE, into
// the page cache of the node of an openless connection that has it, so
// the reads that follow are page cache hits instead of READs. Only those
// connections: there the kernel keeps pages across opens, and only this
// process changes them. An offer for a node the kernel has read already is
// dropped. The kernel learns of the files of a directory from the listing
// the mount offers them from, so an offer often comes before the kernel
// (or go-fuse) knows the node: such a page is parked, by directory, and
// stored when the kernel shows it knows the directory's entries: at the
// READDIR that finds the end of the listing, or the first READ of a file
// in it (what a scanner does next). Parked pages are
// bounded (parkMax); past that the oldest directory's go. Any failure only
// means the file is read on demand.
type pageStore struct {
	fsys  mounts.FS
	log   *slog.Logger
	owner *conn // the main connection, which registered the sink
	// conns are the openless connections, the stacked ones first.
	conns   []*conn
	stopped atomic.Bool
	// stored counts the files handed to the kernel, for tests.
	stored atomic.Int64

	// parked holds pages offered before the kernel knew their nodes, by
	// fsys-relative directory; dirs is their order, oldest first.
	mu      sync.Mutex
	parked  map[string][]parkedPage
	dirs    []string
	bytes   int64
	nParked atomic.Int64 // len(parked), for the READ path's fast check
}

type parkedPage struct {
	c    *conn
	rel  string
	data []byte
}

// parkMax bounds the bytes of parked pages.
const parkMax = 16 << 20

// storePages registers the page store of s's openless connections, if it
// has any.
func (s *Server) storePages() {
	p := &pageStore{fsys: s.conn.fsys, log: s.conn.log, owner: s.conn, parked: make(map[string][]parkedPage)}
	for _, sub := range s.subs {
		p.conns = append(p.conns, sub.conn)
	}
	if s.conn.how.openless { // last: its root "." holds every name
		p.conns = append(p.conns, s.conn)
	}
	if len(p.conns) == 0 {
		return
	}
	for _, c := range p.conns {
		c.pages.Store(p)
	}
	s.conn.pages.Store(p)
	mounts.OfferPages(p.fsys, p.offer)
}

// stop drops every later offer and unregisters the sink; c is the
// connection that closed, and only the main one stops the store.
func (p *pageStore) stop(c *conn) {
	if p == nil || c != p.owner || p.stopped.Swap(true) {
		return
	}
	mounts.OfferPages(p.fsys, nil)
	p.mu.Lock()
	clear(p.parked)
	p.dirs, p.bytes = nil, 0
	p.nParked.Store(0)
	p.mu.Unlock()
}

// offer is the sink: name is fsys-relative.
func (p *pageStore) offer(name string, data []byte) {
	if p.stopped.Load() {
		return
	}
	for _, c := range p.conns {
		if within(name, c.prefix) || c.prefix == "." {
			if !p.store(c, mounts.Rel(name, c.prefix), data) {
				p.park(name, parkedPage{c: c, rel: mounts.Rel(name, c.prefix), data: bytes.Clone(data)})
			}
			return
		}
	}
}

// store hands data to the kernel as the content of c's node rel, once per
// node however often it is offered. It reports false when the kernel (or
// go-fuse) does not know the node yet: worth another try later.
func (p *pageStore) store(c *conn, rel string, data []byte) bool {
	if p.stopped.Load() {
		return true
	}
	ch := c.lookup(rel)
	if ch == nil {
		return false // not in the inode tree yet
	}
	n, ok := ch.Operations().(*node)
	if !ok || ch.StableAttr().Mode&syscall.S_IFMT != syscall.S_IFREG || n.served.Load() ||
		int64(len(data)) != n.lastSize() || !n.pushed.CompareAndSwap(false, true) {
		return true // read, stored (or being stored), or not what the kernel was told
	}
	if n.changed.Load() {
		return true
	}
	switch errno := ch.WriteCache(0, data); errno {
	case 0:
		p.stored.Add(1)
		if n.changed.Load() {
			// Changed while the pages went in (a WRITE on a
			// copy-on-write connection holds the pages the store
			// waits for): they are the commit's, not the file's.
			c.notify(ch.NotifyContent(0, 0), "content", rel)
		}
	case syscall.ENOENT: // the kernel does not know the node (yet, or any more)
		n.pushed.Store(false)
		return false
	default:
		n.pushed.Store(false)
		p.log.Debug("fusefs: storing offered pages failed", "name", rel, "errno", errno.Error())
	}
	return true
}

// unpark drops the pages parked for the fsys-relative name and below it:
// it changed, and they are of what it was.
func (p *pageStore) unpark(name string) {
	if p == nil || p.nParked.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for dir, pgs := range p.parked {
		kept := pgs[:0]
		for _, q := range pgs {
			if full := path.Join(q.c.prefix, q.rel); within(full, name) {
				p.bytes -= int64(len(q.data))
				continue
			}
			kept = append(kept, q)
		}
		if len(kept) == 0 {
			delete(p.parked, dir)
			p.dirs = slices.DeleteFunc(p.dirs, func(d string) bool { return d == dir })
		} else {
			p.parked[dir] = kept
		}
	}
	p.nParked.Store(int64(len(p.parked)))
}

// park keeps pg, the page of the fsys-relative name, for a later try.
func (p *pageStore) park(name string, pg parkedPage) {
	dir := path.Dir(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.Load() || int64(len(pg.data)) > parkMax {
		return
	}
	if _, ok := p.parked[dir]; !ok {
		p.dirs = append(p.dirs, dir)
		// Should no READ come soon (a listing nobody reads from yet),
		// the parked pages are tried again anyway.
		time.AfterFunc(retryAfter, func() { p.flush(dir) })
	}
	p.parked[dir] = append(p.parked[dir], pg)
	p.bytes += int64(len(pg.data))
	for p.bytes > parkMax && len(p.dirs) > 0 {
		old := p.dirs[0]
		p.dirs = p.dirs[1:]
		for _, q := range p.parked[old] {
			p.bytes -= int64(len(q.data))
		}
		delete(p.parked, old)
	}
	p.nParked.Store(int64(len(p.parked)))
}

// known is told of a READ of n: the kernel knows n, and so the entries of
// the listing it learnt n from. The pages parked for n's directory are
// tried again.
func (p *pageStore) known(n *node) {
	if p == nil || p.nParked.Load() == 0 {
		return
	}
	if name, ok := n.name(); ok {
		p.flush(path.Dir(name))
	}
}

// listed is told that the kernel lists the directory n again after the
// request that built its listing (a program reading a directory to its
// end sends one more READDIR, which finds the end): the kernel took in
// the entries of the first, so the pages parked for them are tried
// again, ahead of the first READ among them.
func (p *pageStore) listed(n *node) {
	if p == nil || p.nParked.Load() == 0 {
		return
	}
	if name, ok := n.name(); ok {
		p.flush(name)
	}
}

// flush tries the pages parked for the fsys-relative directory dir once
// more, from a goroutine of its own (never inside a request); those that
// fail again are dropped.
func (p *pageStore) flush(dir string) {
	p.mu.Lock()
	pgs := p.parked[dir]
	if pgs != nil {
		delete(p.parked, dir)
		p.dirs = slices.DeleteFunc(p.dirs, func(d string) bool { return d == dir })
		for _, q := range pgs {
			p.bytes -= int64(len(q.data))
		}
		p.nParked.Store(int64(len(p.parked)))
	}
	p.mu.Unlock()
	if pgs != nil {
		go func() {
			for _, q := range pgs {
				p.store(q.c, q.rel, q.data)
			}
		}()
	}
}

// retryAfter is how long parked pages wait for a READ in their directory
// before they are tried again without one.
const retryAfter = 2 * time.Millisecond

// lookup returns the inode of c's node rel (relative to c's root), if
// go-fuse has it.
func (c *conn) lookup(rel string) *gofs.Inode {
	in := c.root.EmbeddedInode()
	if rel == "." {
		return in
	}
	for elem := range strings.SplitSeq(rel, "/") {
		if in = in.GetChild(elem); in == nil {
			return nil
		}
	}
	return in
}
