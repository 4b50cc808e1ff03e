package remotefs

import (
	"context"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// readAhead is how much a read past a small file asks for at least, and
// how far ahead a sequential reader is served.
const readAhead = 1 << 20

// maxInFlight bounds the bytes of writes sent and not yet acknowledged.
const maxInFlight = 8 << 20

// Open implements mounts.FS. A small file comes whole with the open (or
// from the cache, with no round trip at all); a larger one keeps its
// handle on the peer and reads ahead (opened there at its first read when
// the cache knows it).
func (f *ReadOnlyFS) Open(ctx context.Context, name string) (mounts.File, error) {
	if err := mounts.CheckPath("open", name); err != nil {
		return nil, err
	}
	parent, _ := mounts.Split(name)
	if file, ok := f.cachedFile(name, parent); ok {
		return file, nil
	}
	small := false
	if a, err, ok := f.cache.stat(name); ok && err == nil && a.Mode.IsRegular() {
		switch {
		case a.Size > peer.WholeFile && f.cache.watched():
			return &lazyFile{f: f, name: name, a: a}, nil
		case a.Size <= peer.WholeFile:
			if waited, err := f.awaitFirstAnswer(ctx, parent); err != nil {
				return nil, mounts.PathErr("open", name, err)
			} else if waited {
				if file, ok := f.cachedFile(name, parent); ok {
					return file, nil
				}
			}
			small = true
			f.readAhead(f.cache.aheadRoot(parent), parent) // beside this open, not after it
		}
	}
	file, err := f.openPeer(ctx, name)
	if _, whole := file.(*memFile); whole && !small {
		f.readAhead(f.cache.aheadRoot(parent), parent)
	}
	return file, err
}

// cachedFile is name whole from the cache, if it is there, with the pages
// of the files beside it offered to the kernel face.
func (f *ReadOnlyFS) cachedFile(name, parent string) (mounts.File, bool) {
	e, ok := f.cache.file(name)
	if !ok {
		return nil, false
	}
	f.offerBeside(parent)
	return &memFile{a: e.a, data: e.data}, true
}

// openPeer opens name for reading on the peer: whole when it is small.
func (f *ReadOnlyFS) openPeer(ctx context.Context, name string) (mounts.File, error) {
	epoch := f.cache.epoch()
	resp, s, err := f.doOn(ctx, &wire.Request{Op: wire.OpOpen, Name: name, Flag: os.O_RDONLY})
	if err != nil {
		return nil, err
	}
	a := f.attrOf(resp.Attr)
	if resp.EOF {
		// Whole: the peer's handle is not needed.
		f.closeHandle(s, resp.Handle)
		f.cache.putFile(epoch, name, a, resp.Data)
		return &memFile{a: a, data: resp.Data}, nil
	}
	f.cache.putAttr(epoch, name, a)
	return &remoteFile{f: f, s: s, name: name, h: resp.Handle, a: a}, nil
}

// closeHandle closes a handle the caller will not use, without waiting.
func (f *ReadOnlyFS) closeHandle(s *session, h uint64) {
	if s == nil {
		return
	}
	if ch, err := s.start(&wire.Request{Op: wire.OpClose, Handle: h}); err == nil {
		go func() { _, _ = s.wait(context.Background(), ch) }()
	}
}

// lazyFile is a large file opened for reading whose attributes the cache
// holds while the change stream is up: it is opened on the peer at its
// first read, which the kernel, keeping the pages an earlier open read,
// may never send (git opens its index and packs at every command), or
// takes the file a read-ahead opened ahead for it (openahead.go).
type lazyFile struct {
	f    *ReadOnlyFS
	name string
	a    mounts.Attr

	mu     sync.Mutex
	open   mounts.File // once opened on the peer
	err    error
	closed bool
}

func (l *lazyFile) file() (mounts.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil && l.err == nil && !l.closed {
		if r := l.f.claimAhead(l.name, l.a); r != nil {
			l.open = r
		} else {
			l.open, l.err = l.f.openPeer(context.Background(), l.name)
		}
	}
	if l.closed {
		return nil, mounts.PathErr("read", l.name, fs.ErrClosed)
	}
	return l.open, l.err
}

func (l *lazyFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := l.file()
	if err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

// Stat answers from what the open was given until the file is opened on
// the peer: the attributes the change stream keeps current.
func (l *lazyFile) Stat() (mounts.Attr, error) {
	l.mu.Lock()
	f := l.open
	l.mu.Unlock()
	if f == nil {
		return l.a, nil
	}
	return f.Stat()
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.open != nil {
		return l.open.Close()
	}
	return nil
}

// memFile is a file read whole.
type memFile struct {
	a    mounts.Attr
	data []byte
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m *memFile) Stat() (mounts.Attr, error) { return m.a, nil }
func (m *memFile) Close() error               { return nil }

// remoteFile is a file open on the peer.
type remoteFile struct {
	f    *ReadOnlyFS
	s    *session
	name string
	h    uint64
	a    mounts.Attr

	mu     sync.Mutex
	chunks []*chunk // asked for: the one read last and those ahead of it
	read   bool     // a chunk was read; last is the offset of the one read furthest in order
	last   int64
	asks   int // chunks asked for, for tests
	closed bool
	// writable: opened for writing, so its requests are applied on the
	// peer's change queue, after every change sent before them.
	writable bool
}

// chunk is the readAhead bytes at off (a multiple of readAhead) of a file
// open on the peer, asked for at epoch (the cache's): served only while
// nothing about the name was reported changed since (a write through
// another handle, a change elsewhere).
type chunk struct {
	off   int64
	epoch uint64
	done  chan struct{}
	data  []byte
	eof   bool
	err   error
}

// aheadChunks is how many chunks a sequential reader of a large file has
// asked for at most: the one it reads and those after it, in flight at
// once, so that the link's round trip is paid once per aheadChunks
// chunks rather than once per chunk.
const aheadChunks = 4

// req sends a request on the file's handle and waits for the answer.
func (r *remoteFile) req(ctx context.Context, req *wire.Request) (*wire.Response, error) {
	op := req.Op.String()
	req.Handle, req.Name = r.h, r.name
	if !r.writable {
		r.f.barrier() // writes through other handles first
	} // else ordered after every change on the peer
	resp, err := r.f.callOn(ctx, r.s, req)
	if err != nil {
		return nil, mounts.PathErr(op, r.name, err)
	}
	if resp.Err != nil {
		return nil, resp.Err.Err(op, r.name)
	}
	return resp, nil
}

// ReadAt serves a read from the chunks, which tile the file: a read across
// the end of one goes on in the next. A chunk that ends short of readAhead
// bytes without the end of the file (it changed as it was read) is not
// trusted past what it holds: the rest is read with a request of its own.
func (r *remoteFile) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > readAhead {
		return r.readDirect(p, off)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		c := r.chunkAt(at)
		<-c.done
		if c.err != nil {
			r.drop(c)
			return n, c.err
		}
		if rel := at - c.off; rel < int64(len(c.data)) {
			n += copy(p[n:], c.data[rel:])
			if n == len(p) {
				break
			}
		}
		if int64(len(c.data)) < readAhead {
			if c.eof {
				return n, io.EOF
			}
			r.drop(c)
			m, err := r.readDirect(p[n:], off+int64(n))
			return n + m, err
		}
	}
	return n, nil
}

// chunkAt returns the chunk holding offset at, asking for it if it was not
// asked for since the name last changed. A reader in order has the chunks
// after it asked for too, up to aheadChunks from its own. In order means
// the first read, or one in the chunk read furthest so far, the one after
// it or the one before it: the kernel reads ahead with several READs at
// once, which may come in any order. The chunks further behind the reader
// are forgotten; so is everything but its own chunk when it jumps.
func (r *remoteFile) chunkAt(at int64) *chunk {
	k := at / readAhead * readAhead
	r.mu.Lock()
	defer r.mu.Unlock()
	end := k + readAhead // the chunks wanted: [k, end)
	if !r.read || (k >= r.last-readAhead && k <= r.last+readAhead) {
		end = k + aheadChunks*readAhead
		r.last = max(r.last, k)
	} else {
		r.last = k
	}
	r.read = true
	kept := r.chunks[:0]
	for _, c := range r.chunks {
		if c.off >= r.last-readAhead && c.off < r.last+aheadChunks*readAhead && !r.f.cache.changedSince(r.name, c.epoch) {
			kept = append(kept, c)
		}
	}
	clear(r.chunks[len(kept):])
	r.chunks = kept
	var found *chunk
	for next := k; next < end; next += readAhead {
		if next > k && (next >= r.a.Size || r.closed) {
			break // the reader's own chunk is asked for even past the size it was opened with
		}
		i := slices.IndexFunc(r.chunks, func(c *chunk) bool { return c.off == next })
		if i < 0 {
			r.chunks = append(r.chunks, r.ask(next))
			i = len(r.chunks) - 1
		}
		if next == k {
			found = r.chunks[i]
		}
		if r.chunks[i].ended() {
			break // nothing after the end of the file
		}
	}
	return found
}

// ended reports whether the chunk was answered with the end of the file,
// or failed: nothing after it is worth asking for.
func (c *chunk) ended() bool {
	select {
	case <-c.done:
		return c.eof || c.err != nil
	default:
		return false
	}
}

// ask sends the read of the chunk at off. r.mu is held.
func (r *remoteFile) ask(off int64) *chunk {
	r.asks++
	c := &chunk{off: off, epoch: r.f.cache.epoch(), done: make(chan struct{})}
	r.f.chunksOut.Add(1)
	go func() {
		defer close(c.done)
		defer r.f.chunksOut.Add(-1)
		resp, err := r.req(context.Background(), &wire.Request{Op: wire.OpRead, Off: off, Size: readAhead})
		if err != nil {
			c.err = err
			return
		}
		c.data, c.eof = resp.Data, resp.EOF
	}()
	return c
}

// drop forgets c.
func (r *remoteFile) drop(c *chunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = slices.DeleteFunc(r.chunks, func(o *chunk) bool { return o == c })
}

// readDirect reads p at off with a request of its own.
func (r *remoteFile) readDirect(p []byte, off int64) (int, error) {
	resp, err := r.req(context.Background(), &wire.Request{Op: wire.OpRead, Off: off, Size: int64(len(p))})
	if err != nil {
		return 0, err
	}
	n := copy(p, resp.Data)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Stat of a file open for reading answers from the cache while the change
// stream keeps it current and the name is still the file opened (tar
// stats each file it read: a round trip for each large one).
func (r *remoteFile) Stat() (mounts.Attr, error) {
	if r.f.cache.watched() {
		if a, err, ok := r.f.cache.stat(r.name); ok && err == nil && a.Ino == r.a.Ino && a.Mode.IsRegular() {
			return a, nil
		}
	}
	return r.fstat()
}

// fstat asks the peer for the attributes of the file open.
func (r *remoteFile) fstat() (mounts.Attr, error) {
	resp, err := r.req(context.Background(), &wire.Request{Op: wire.OpFstat})
	if err != nil {
		return mounts.Attr{}, err
	}
	return r.f.attrOf(resp.Attr), nil
}

func (r *remoteFile) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	if r.s.alive() != nil {
		return nil // the peer closed it with the session
	}
	_, err := r.req(context.Background(), &wire.Request{Op: wire.OpClose})
	return err
}

// writableFile is a file open for writing on the peer. Writes are sent
// without waiting for their answers (the peer applies a handle's requests
// in order); the first one that failed is reported by the next call, and
// by Sync and Close, which wait for every answer.
type writableFile struct {
	remoteFile

	wmu      sync.Mutex
	cond     *sync.Cond
	inFlight int64
	werr     error
	// opened: nothing was done through the handle since its open, whose
	// answer carried the file's attributes (the kernel face's create
	// stats the file it just made: that costs no second round trip),
	// asked at epoch. written: a write or truncate was sent through it.
	opened, written bool
	epoch           uint64
	// posted: created here without waiting for the peer (postCreate);
	// local is then its attributes as this daemon made them, and the
	// name stays pending (its change stream reports are the daemon's
	// own) until the close is answered.
	posted bool
	local  mounts.Attr
	asking int // closes posted (closePosted), unanswered
	// said: werr was returned by Sync, so Close need not keep it for
	// the next fsync.
	said bool
}

// fail notes an error of the file found after its call returned.
func (w *writableFile) fail(err error) {
	w.wmu.Lock()
	if w.werr == nil {
		w.werr = err
	}
	w.cond.Broadcast()
	w.wmu.Unlock()
}

// touch notes that the handle is used for more than its open.
func (w *writableFile) touch(write bool) {
	w.wmu.Lock()
	w.opened = false
	w.written = w.written || write
	w.wmu.Unlock()
}

func (w *writableFile) pending() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.werr
}

func (w *writableFile) WriteAt(p []byte, off int64) (int, error) {
	if err := w.pending(); err != nil {
		return 0, err
	}
	w.touch(true)
	w.wmu.Lock()
	for w.inFlight > 0 && w.inFlight+int64(len(p)) > maxInFlight && w.werr == nil {
		w.cond.Wait()
	}
	w.inFlight += int64(len(p))
	w.wmu.Unlock()
	w.f.wrote(int64(len(p)))
	data := append([]byte(nil), p...)
	if w.posted {
		// Its times are this daemon's: what the kernel was told is
		// what the peer sets (wire: a write's Mtime).
		now := time.Now()
		w.writePosted(&wire.Request{Op: wire.OpWrite, Handle: w.h, Name: w.name, Off: off, Data: data, Mtime: now, States: true},
			func() { w.grew(off+int64(len(p)), now) })
		return len(p), nil
	}
	ch, err := w.s.start(&wire.Request{Op: wire.OpWrite, Handle: w.h, Name: w.name, Off: off, Data: data})
	if err != nil {
		w.done(int64(len(p)), mounts.PathErr("write", w.name, &linkError{what: "the link to " + w.f.opts.Source + " was lost", cause: err}))
		return 0, w.pending()
	}
	go func() {
		resp, err := w.s.wait(context.Background(), ch)
		w.done(int64(len(data)), w.writeErr(resp, err, len(data)))
	}()
	w.f.cache.invalidateFile(w.name)
	return len(p), nil
}

// grew keeps the attributes of a file created here, written up to end.
func (w *writableFile) grew(end int64, now time.Time) {
	w.wmu.Lock()
	w.local.Size = max(w.local.Size, end)
	w.local.Mtime, w.local.Ctime = now, now
	a := w.local
	w.wmu.Unlock()
	w.f.cache.keepIfSame(w.name, a)
}

// writeErr is what the answer to a write of n bytes (or the link's err)
// means for the writer.
func (w *writableFile) writeErr(resp *wire.Response, err error, n int) error {
	switch {
	case err != nil:
		return mounts.PathErr("write", w.name, &linkError{what: "the link to " + w.f.opts.Source + " was lost before the write was confirmed", cause: err})
	case resp.Err != nil:
		return resp.Err.Err("write", w.name)
	case resp.N != n:
		return mounts.PathErr("write", w.name, io.ErrShortWrite)
	}
	return nil
}

// done accounts for one answered write.
func (w *writableFile) done(n int64, err error) {
	defer w.f.wrote(-n)
	w.wmu.Lock()
	w.inFlight -= n
	if err != nil && w.werr == nil {
		w.werr = err
	}
	w.cond.Broadcast()
	w.wmu.Unlock()
}

// drain waits for every write sent to be answered.
func (w *writableFile) drain() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	for w.inFlight > 0 {
		w.cond.Wait()
	}
	return w.werr
}

func (w *writableFile) ReadAt(p []byte, off int64) (int, error) {
	w.touch(false)
	// Ordered after the writes on the peer; nothing kept here.
	resp, err := w.req(context.Background(), &wire.Request{Op: wire.OpRead, Off: off, Size: int64(len(p))})
	if err != nil {
		return 0, err
	}
	n := copy(p, resp.Data)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (w *writableFile) Truncate(size int64) error {
	if err := w.pending(); err != nil {
		return err
	}
	w.touch(true)
	_, err := w.req(context.Background(), &wire.Request{Op: wire.OpTruncateH, Size: size})
	w.f.cache.invalidate(w.name)
	return err
}

// Sync returns once the peer's fsync did: the data is on the remote disk.
// The error of a change to the file posted earlier is its error.
func (w *writableFile) Sync() error {
	w.touch(false)
	var err error
	if w.drain() == nil {
		_, err = w.req(context.Background(), &wire.Request{Op: wire.OpSyncH})
	}
	// The errors kept for the file's fsync are said now, whichever.
	derr := w.f.takeDeferred(w.name)
	if werr := w.pending(); werr != nil {
		return w.told(werr)
	}
	if derr != nil {
		return derr
	}
	return err
}

// told notes that the writer was told of werr, and returns it.
func (w *writableFile) told(werr error) error {
	w.wmu.Lock()
	w.said = true
	w.wmu.Unlock()
	return werr
}

func (w *writableFile) Stat() (mounts.Attr, error) {
	if w.posted {
		// Once closed: as the peer says.
		w.wmu.Lock()
		for w.asking > 0 {
			w.cond.Wait()
		}
		w.wmu.Unlock()
		// As this daemon made it, and changed it since by name.
		if a, err, ok := w.f.cache.stat(w.name); ok && err == nil && a.Ino == w.a.Ino {
			return a, nil
		}
		// The name is no longer the file (unlinked, renamed over):
		// the peer says what it is, after what was sent before.
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if !closed {
			return w.remoteFile.fstat()
		}
		w.wmu.Lock()
		defer w.wmu.Unlock()
		return w.local, nil
	}
	w.wmu.Lock()
	opened := w.opened
	w.opened = false
	w.wmu.Unlock()
	if opened && !w.f.cache.staleSince(w.epoch, w.name, w.a) {
		return w.a, nil // as the open found it, a moment ago
	}
	return w.remoteFile.fstat() // ordered after the writes on the peer
}

// Close waits for every write's answer: a write the peer never confirmed
// is the close's error.
func (w *writableFile) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	if w.posted {
		return w.closePosted()
	}
	_, cerr := w.req(context.Background(), &wire.Request{Op: wire.OpClose})
	werr := w.drain()
	w.wmu.Lock()
	written := w.written
	w.wmu.Unlock()
	if written {
		w.f.cache.invalidate(w.name)
	}
	if werr != nil {
		w.wmu.Lock()
		said := w.said
		w.wmu.Unlock()
		if !said {
			// The kernel face closes its files when it no longer
			// needs them, long after close(2), with no caller to
			// tell: the next fsync that covers the file does.
			w.f.deferError(w.name, werr)
		}
		return werr
	}
	return cerr
}

// OpenFile implements mounts.OpenFileFS.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if !mounts.WantsWrite(flag) {
		return f.Open(ctx, name)
	}
	if w, ok := f.postCreate(ctx, name, flag, perm); ok {
		return w, nil
	}
	asked := f.cache.epoch()
	resp, s, err := f.doOn(ctx, &wire.Request{Op: wire.OpOpen, Name: name, Flag: flag, Mode: perm})
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 || err == nil {
		// A file of one link: the change touched no other name.
		f.cache.invalidateAs(name, err == nil && resp.Attr.Nlink < 2)
	}
	if err != nil {
		return nil, err
	}
	// The open's attributes serve its first stat, unless another name of
	// the file changed while it was on its way (the name itself is this
	// open's own change, just made); later changes count from now.
	a := f.attrOf(resp.Attr)
	w := &writableFile{remoteFile: remoteFile{f: f.ReadOnlyFS, s: s, name: name, h: resp.Handle, a: a, writable: true},
		opened: !f.cache.linksChangedSince(asked, a), epoch: f.cache.epoch()}
	w.cond = sync.NewCond(&w.wmu)
	return w, nil
}
