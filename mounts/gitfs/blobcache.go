package gitfs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/singleflight"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/lru"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/objstore"
)

// blobCache holds decoded blob content for every open file of a mount, in
// LRU order, bounded to max bytes in all. Content of spillAt bytes or more
// lives in a temporary file under dir, unlinked as soon as it is created so
// that nothing is left behind, smaller content in memory; when no file can be created
// there the content stays in memory. An entry is pinned while a file has
// it open, so a blob larger than the whole cache still decodes once per
// open, and is dropped when its last file closes.
//
// Content the kernel keeps is not kept twice. A file the kernel face opens
// on a connection whose pages outlive the open (mounts.OpenOptions) and
// reads to its end, and content offered whole to the page sink, is in the
// kernel's page cache from then on, which serves every later read of it;
// so when the last file using such an in-memory entry closes (releaseKept)
// the entry goes, unless some other reader (the tool face, a search) used
// it, which the kernel does not serve (hold). Spilled content stays: it is
// on disk, not in the daemon's memory. The bound still holds for what is
// kept.
type blobCache struct {
	spillAt int64
	dir     string
	// onSpillError is told, once, why content could not spill to disk.
	onSpillError func(error)
	spillOnce    sync.Once
	// store, when set, is the shared file-backed store (blobstore.go):
	// content is read from it before it is decoded, and what is decoded
	// is stored in it.
	store *blobStore
	// pack, when set, is the tree pack of the mount's tree
	// (treepack.go): acquire serves content from its mapping before the
	// cache, the store or a decode is tried.
	pack atomic.Pointer[treePack]
	// ancPack, when set, is the tree pack of the ancestor whose index the
	// mount's searches narrow with until its own is built
	// (search_ancestor.go): the files a later commit did not change are
	// in it. Looked in after pack.
	ancPack atomic.Pointer[treePack]

	// loads counts decodes, so tests can tell a hit from a miss; shed
	// counts the entries dropped because the kernel keeps their pages.
	loads, shed atomic.Int64
	// flight collapses the loads of one blob by concurrent acquires.
	flight singleflight.Group

	mu sync.Mutex
	// entries holds every loaded blob, bounded to max bytes in all. An
	// entry is pinned while a file has it open; eviction drops unpinned
	// ones only.
	entries *lru.LRU[plumbing.Hash, *blob]
	closed  bool
}

// blob is one cache entry, loaded: its mem, file and size never change.
type blob struct {
	hash plumbing.Hash
	size int64
	mem  []byte
	file *os.File
	off  int64 // where the content starts in file
	// pack is the tree pack whose mapping mem is, referenced until the
	// entry drops.
	pack *treePack
	refs int  // open files using it; pinned in entries while > 0
	gone bool // out of entries (evicted, or the cache closed)
	// held says a reader the kernel's page cache does not serve used
	// it: it stays when the kernel's files close (releaseKept).
	held bool
}

// loader opens the content of a blob and returns its size as the object
// header announces it; fill checks the content against that size.
type loader func(ctx context.Context) (r io.ReadCloser, size int64, err error)

func newBlobCache(max, spillAt int64, dir string, onSpillError func(error)) *blobCache {
	c := &blobCache{spillAt: spillAt, dir: dir, onSpillError: onSpillError}
	c.entries = lru.New[plumbing.Hash](max, func(b *blob) int64 { return b.size }, func(_ plumbing.Hash, b *blob) {
		// Evicted, or cleared by close: the content of an entry a
		// file still has open goes when its last file closes.
		b.gone = true
		if b.refs == 0 {
			b.drop()
		}
	})
	return c
}

var errCacheClosed = errors.New("blob cache closed")

// acquire returns the pinned entry for h, loading it with load on a miss.
// Concurrent acquires of one blob share one load (a singleflight), run by
// the acquire that started it, with its context, and pinned for it; the
// others wait for the load to end, even when their own context ends first
// (they then get their context's error and no pin), and pin the entry, or
// load it again if it went in between (its files closed and eviction took
// it, as eviction takes at once a blob larger than the cache). A load that
// failed because its caller's context ended is retried by the callers
// still waiting. The load runs on its caller's goroutine (singleflight's
// Do): handing it to a goroutine of its own (DoChan, whose waiters could
// leave early) cost a cold scan of small files (BenchmarkTree/scan) a
// quarter of its time or more.
func (c *blobCache) acquire(ctx context.Context, h plumbing.Hash, load loader) (*blob, error) {
	if b := c.packed(h); b != nil {
		return b, nil
	}
	for {
		if b, err := c.pin(h); b != nil || err != nil {
			return b, err
		}
		// mine is set when the load ran for this call: its entry is
		// then pinned for this call.
		var mine bool
		v, err, _ := c.flight.Do(flightKey(h), func() (any, error) {
			b, err := c.load(ctx, h, load)
			mine = err == nil
			return b, err
		})
		switch {
		case mine:
			return v.(*blob), nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil:
			continue // another call's load: pin its entry
		case isContextErr(err):
			continue // the load's caller gave up; try again
		}
		return nil, err
	}
}

// packed returns h's content from the tree pack, pinned, when the pack
// holds it sound: an entry of its own, outside the cache (gone from the
// start), which drops when its last reader releases it. Content in the
// mapping costs nothing to find again, so keeping it in the LRU would only
// push out what did cost a decode.
func (c *blobCache) packed(h plumbing.Hash) *blob {
	var b *blob
	c.inPacks(func(p *treePack) bool {
		data, ok := p.content(h)
		if ok {
			p.acquire() // the entry's
			b = &blob{hash: h, size: int64(len(data)), mem: data, pack: p, refs: 1, gone: true}
		}
		return ok
	})
	return b
}

// packs are where the tree packs are, the mount's first.
func (c *blobCache) packs() [2]*atomic.Pointer[treePack] {
	return [2]*atomic.Pointer[treePack]{&c.pack, &c.ancPack}
}

// inPacks calls fn with the mount's tree pack, then the ancestor's, each
// referenced for the call, until fn returns true; it reports whether one
// did.
func (c *blobCache) inPacks(fn func(p *treePack) bool) bool {
	for _, ptr := range c.packs() {
		p := ptr.Load()
		if p == nil || !p.acquire() {
			continue
		}
		found := fn(p)
		p.release()
		if found {
			return true
		}
	}
	return false
}

// flightKey is h as a singleflight key. It takes h by value: slicing the
// caller's h would move it to the heap, on every hit too.
func flightKey(h plumbing.Hash) string { return string(h[:]) }

// pin returns the entry for h pinned, or nil when h is not in the cache.
func (c *blobCache) pin(h plumbing.Hash) (*blob, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errCacheClosed
	}
	b, ok := c.entries.Pin(h)
	if !ok {
		return nil, nil
	}
	b.refs++
	return b, nil
}

// load is the one load of h that concurrent acquires share: it returns the
// entry for h pinned for the acquire that started it, decoding h into a
// new entry unless another load put one in since that acquire looked.
func (c *blobCache) load(ctx context.Context, h plumbing.Hash, load loader) (*blob, error) {
	if b, err := c.pin(h); b != nil || err != nil {
		return b, err
	}
	b := &blob{hash: h, refs: 1}
	if err := c.fill(ctx, b, load); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		b.drop()
		return nil, errCacheClosed
	}
	c.entries.AddPinned(h, b)
	return b, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fill decodes the blob into memory or a spill file.
func (c *blobCache) fill(ctx context.Context, b *blob, load loader) error {
	if c.store != nil && c.store.get(b, c.spillAt) {
		return nil
	}
	c.loads.Add(1)
	r, size, err := load(ctx)
	if err != nil {
		return err
	}
	defer func() { r.Close() }()
	b.size = size
	if size >= c.spillAt && c.store != nil {
		w, err := c.store.writerFor(b.hash)
		if err == nil {
			err = copyExact(ctx, w, r, size)
			if err != nil {
				w.abort()
			}
			var werr *storeWriteError
			if errors.As(err, &werr) {
				// The store's disk failed (full): decoded again,
				// into memory.
				c.store.fail(werr.err)
				r.Close()
				c.loads.Add(1)
				if r, size, err = load(ctx); err != nil {
					r = io.NopCloser(nil)
					return err
				}
				b.size = size
				return c.fillMem(ctx, b, r, size)
			}
			if err != nil {
				return err
			}
			if err := w.commit(); err != nil {
				// Not in the store, still whole in the file.
				os.Remove(w.f.Name())
				c.store.fail(err)
			}
			b.file, b.off = w.f, storeHeader
			return nil
		}
		c.store.fail(err)
	}
	if size >= c.spillAt && c.dir != "" {
		f, err := c.spillFile()
		if err == nil {
			if err := copyExact(ctx, f, r, size); err != nil {
				f.Close()
				return err
			}
			b.file = f
			return nil
		}
		c.spillOnce.Do(func() {
			if c.onSpillError != nil {
				c.onSpillError(err)
			}
		})
	}
	return c.fillMem(ctx, b, r, size)
}

// fillMem decodes the blob from r into memory.
func (c *blobCache) fillMem(ctx context.Context, b *blob, r io.Reader, size int64) error {
	buf := make([]byte, size)
	if err := copyExact(ctx, &sliceWriter{buf: buf}, r, size); err != nil {
		return err
	}
	b.mem = buf
	if c.store != nil {
		c.store.put(b.hash, buf)
	}
	return nil
}

// spillFile creates an unlinked temporary file in c.dir.
func (c *blobCache) spillFile() (*os.File, error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(c.dir, "blob-")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// copyChunk is how much is decoded between two checks of the context.
const copyChunk = 1 << 20

// copyExact copies exactly size bytes from r to w and fails if r holds
// more or fewer: the header and the content disagree only in a corrupt
// object.
func copyExact(ctx context.Context, w io.Writer, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if wt, ok := r.(io.WriterTo); ok && size <= copyChunk {
		// A small object go-git decoded in memory: one copy, no buffer.
		// A longer content overflows w (objstore.ErrSizeMismatch).
		n, err := wt.WriteTo(w)
		if err == nil && n != size {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	buf := make([]byte, min(size+1, 64<<10))
	var done int64
	for done < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.CopyBuffer(w, io.LimitReader(r, min(copyChunk, size-done)), buf)
		done += n
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
	}
	if n, _ := r.Read(buf[:1]); n > 0 {
		return objstore.ErrSizeMismatch
	}
	return nil
}

// sliceWriter writes into a preallocated slice.
type sliceWriter struct {
	buf []byte
	off int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.buf)-w.off {
		return 0, objstore.ErrSizeMismatch
	}
	w.off += copy(w.buf[w.off:], p)
	return len(p), nil
}

// release unpins b, and evicts the least recently used unpinned entries
// while the cache is over its bound.
func (c *blobCache) release(b *blob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.refs--
	switch {
	case b.refs > 0:
	case b.gone:
		b.drop()
	default:
		c.entries.Unpin(b.hash)
	}
}

// hold marks b as used by a reader the kernel's page cache does not serve.
func (c *blobCache) hold(b *blob) {
	c.mu.Lock()
	b.held = true
	c.mu.Unlock()
}

// releaseKept unpins b for a reader whose pages the kernel keeps (see
// blobCache): with whole set, its content is in the page cache, so once
// nobody uses b its in-memory content goes, unless a reader the kernel
// does not serve used it. Otherwise it is release.
func (c *blobCache) releaseKept(b *blob, whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.refs--
	switch {
	case b.refs > 0:
	case b.gone:
		b.drop()
	case whole && !b.held && b.file == nil:
		c.entries.Remove(b.hash)
		b.gone = true
		b.drop()
		c.shed.Add(1)
	default:
		c.entries.Unpin(b.hash)
	}
}

// drop frees the content of an entry nobody uses any more.
func (b *blob) drop() {
	if b.file != nil {
		b.file.Close()
	}
	b.mem = nil
	if b.pack != nil {
		b.pack.release()
		b.pack = nil
	}
}

// bytes returns the whole content: its memory, or, spilled to disk, read
// into buf's storage (grown if too small).
func (b *blob) bytes(buf []byte) ([]byte, error) {
	if b.file == nil && int64(len(b.mem)) == b.size {
		return b.mem, nil
	}
	if int64(cap(buf)) < b.size {
		buf = make([]byte, b.size)
	}
	buf = buf[:b.size]
	if n, err := b.readAt(buf, 0); n != len(buf) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// readAt reads from loaded content with io.ReaderAt semantics.
func (b *blob) readAt(p []byte, off int64) (int, error) {
	if off >= b.size {
		return 0, io.EOF
	}
	want := p
	if rest := b.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	var n int
	if b.file != nil {
		var err error
		if n, err = b.file.ReadAt(want, b.off+off); err != nil && err != io.EOF {
			return n, err
		}
	} else {
		n = copy(want, b.mem[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// setPack serves content from p, the mount's tree pack (or with anc an
// ancestor's), from now on; after close it releases p.
func (c *blobCache) setPack(p *treePack, anc bool) {
	ptr := &c.pack
	if anc {
		ptr = &c.ancPack
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.release()
		return
	}
	if old := ptr.Swap(p); old != nil {
		old.release()
	}
}

// close drops every unpinned entry and refuses new ones; pinned entries are
// dropped when their files close.
func (c *blobCache) close() {
	c.mu.Lock()
	c.closed = true
	c.entries.Clear()
	c.mu.Unlock()
	for _, ptr := range c.packs() {
		if p := ptr.Swap(nil); p != nil {
			p.release() // unmapped once the last entry using it drops
		}
	}
	if c.store != nil {
		c.store.close()
	}
}
