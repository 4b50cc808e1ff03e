package fusefs

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// readahead pushes the content of files into the kernel's page cache
// before they are read, on immutable connections (see "# Read-ahead" in
// the package doc). When a second file of a directory is read, the files
// after it in name order are read from the mount by a few workers and
// stored with NOTIFY_STORE, so the reads that follow are page cache hits
// instead of READ requests that wait for a decode.
type readahead struct {
	conn *conn
	// ctx is the context of the workers' reads, this process's own.
	ctx  context.Context
	jobs chan raJob
	wg   sync.WaitGroup

	// stopped is stop, for the workers, which drop what is still
	// queued once it is set.
	stopped atomic.Bool
	// stored counts the files handed to the kernel.
	stored atomic.Int64
	// scanUntil (Unix nanoseconds) is when the last scan seen ends to
	// count: until then files are queued as their directory is listed.
	scanUntil atomic.Int64

	mu   sync.Mutex
	dirs map[*gofs.Inode]*dirReads
	stop bool
}

// dirReads is what readahead knows of one directory: the first file read
// in it, and whether its siblings were queued already.
type dirReads struct {
	first  *node
	queued bool
}

// Read-ahead bounds: what one directory may queue, the largest file worth
// pushing (larger ones are read in READs of max_read bytes, which the
// kernel's own read-ahead already pipelines), and how many directories are
// remembered before the memory starts over.
const (
	readaheadFiles    = 256
	readaheadBytes    = 16 << 20
	readaheadFileMax  = 1 << 20
	readaheadDirs     = 4096
	readaheadQueueLen = 1024
	scanWindow        = time.Second
	retryAfter        = 2 * time.Millisecond
)

func newReadahead(c *conn) *readahead {
	r := &readahead{conn: c, ctx: mountCtx(), jobs: make(chan raJob, readaheadQueueLen), dirs: make(map[*gofs.Inode]*dirReads)}
	for range max(1, runtime.GOMAXPROCS(0)) {
		r.wg.Add(1)
		go r.work()
	}
	return r
}

// read is told of every handle-less READ at offset 0 of n.
func (r *readahead) read(n *node) {
	if r == nil || !n.served.CompareAndSwap(false, true) {
		return
	}
	_, parent := n.Parent()
	if parent == nil {
		return
	}
	r.mu.Lock()
	if r.stop {
		r.mu.Unlock()
		return
	}
	d := r.dirs[parent]
	switch {
	case d == nil:
		if len(r.dirs) >= readaheadDirs {
			clear(r.dirs)
		}
		r.dirs[parent] = &dirReads{first: n}
		r.mu.Unlock()
		return
	case d.queued || d.first == n:
		r.mu.Unlock()
		return
	}
	d.queued = true
	r.scanUntil.Store(time.Now().Add(scanWindow).UnixNano())
	// The lock stays held while queueing (sends do not block), so close
	// cannot close the queue under a send.
	defer r.mu.Unlock()

	// A second file of the directory: a scan. Queue the files after it.
	self := n.EmbeddedInode()
	after := ""
	var todo []string
	children := parent.Children()
	for name, ch := range children {
		if ch == self {
			after = name
		}
	}
	for name, ch := range children {
		if name <= after || ch.StableAttr().Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		todo = append(todo, name)
	}
	slices.SortFunc(todo, strings.Compare)
	budget := int64(readaheadBytes)
	for _, name := range todo[:min(len(todo), readaheadFiles)] {
		ch := children[name]
		cn, ok := ch.Operations().(*node)
		if !ok || cn.served.Load() {
			continue
		}
		size := cn.lastSize()
		if size <= 0 || size > readaheadFileMax || size > budget {
			continue
		}
		budget -= size
		select {
		case r.jobs <- raJob{ch: ch}:
		default:
			return // the workers are behind: the rest is read on demand
		}
	}
}

// raJob is a file to store in the page cache; retried is set on its second
// try.
type raJob struct {
	ch      *gofs.Inode
	retried bool
}

// looked is told of every regular file the kernel learns of (a LOOKUP, or
// an entry of a READDIRPLUS) with its size. While a scan is under way, a
// file is queued as soon as its directory is listed, ahead of its first
// read.
func (r *readahead) looked(ch *gofs.Inode, size int64) {
	if r == nil || size <= 0 || size > readaheadFileMax || time.Now().UnixNano() > r.scanUntil.Load() {
		return
	}
	r.queue(raJob{ch: ch})
}

// queue queues j unless the queue is full or closed.
func (r *readahead) queue(j raJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop {
		return
	}
	select {
	case r.jobs <- j:
	default:
	}
}

// work stores queued files until close.
func (r *readahead) work() {
	defer r.wg.Done()
	buf := make([]byte, readaheadFileMax)
	for j := range r.jobs {
		if r.store(j.ch, buf) == syscall.ENOENT && !j.retried {
			// Queued from inside the request that introduces the
			// node: the kernel may not have read the reply yet.
			time.AfterFunc(retryAfter, func() { r.queue(raJob{ch: j.ch, retried: true}) })
		}
	}
}

// store reads ch's content from the mount and hands it to the kernel, once
// per node however often it was queued (by the scan that found it and by
// the listing that showed it). Any failure only means the file is read on
// demand later.
func (r *readahead) store(ch *gofs.Inode, buf []byte) syscall.Errno {
	n := ch.Operations().(*node)
	if n.served.Load() || r.stopped.Load() || !n.pushed.CompareAndSwap(false, true) {
		return 0 // read, or stored (or being stored) by another job
	}
	errno := r.push(ch, n, buf)
	if errno != 0 {
		n.pushed.Store(false)
	}
	return errno
}

// push is store's work: ENOENT means the kernel does not know the node
// yet, and is worth a retry; any other failure is final.
func (r *readahead) push(ch *gofs.Inode, n *node, buf []byte) syscall.Errno {
	name, ok := n.name()
	if !ok {
		return syscall.ESTALE // no name left
	}
	f, err := r.conn.fsys.Open(r.ctx, name)
	if err != nil {
		return syscall.EIO // met again, and reported, if it is read
	}
	k, err := f.ReadAt(buf, 0)
	f.Close()
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		return syscall.EIO
	case k == len(buf):
		return syscall.EFBIG // over the bound: read on demand
	}
	errno := ch.WriteCache(0, buf[:k])
	switch errno {
	case 0:
		r.stored.Add(1)
	case syscall.ENOENT: // the kernel does not know the node (yet, or any more)
	default:
		r.conn.log.Debug("fusefs: read-ahead store failed", "name", name, "errno", errno.Error())
	}
	return errno
}

// close stops the workers; queued files are dropped.
func (r *readahead) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.stop {
		r.mu.Unlock()
		return
	}
	r.stop = true
	r.stopped.Store(true)
	close(r.jobs)
	r.mu.Unlock()
	r.wg.Wait()
}
