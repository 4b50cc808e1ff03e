package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/klauspost/compress/zlib"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/lru"
)

// packs reads objects straight from the repository's pack files, safe for
// concurrent use without a global lock: every pack is mapped read-only, its
// index decoded once, and each read inflates from the mapped bytes with a
// pooled zlib reader of its own. go-git's storage, by contrast, seeks one
// shared descriptor per pack and must be serialised (see Store).
//
// It answers only for objects in a pack. A loose object, one in an
// alternate's pack, or a REF_DELTA whose base is outside the object's pack
// is not found (ok=false) and the caller asks go-git.
//
// # Mappings
//
// Git never rewrites a pack in place: a repack writes new files and deletes
// the old ones, and a mapping of a deleted file stays valid until it is
// unmapped. So reload maps the new packs and retires the ones that left,
// and a retired pack is unmapped only when its last reader (a stream still
// open, a delta being resolved) lets go of it. A pack truncated in place
// (not something git does) would fault on access; reads run with
// debug.SetPanicOnFault and fail with errCorruptPack instead of crashing.
//
// # Decoded delta bases
//
// Resolving a delta chain decodes every object on it. The bases are kept in
// a small LRU (baseCacheSize) keyed by pack and offset, so objects sharing a
// chain do not decode it again each time.
type packs struct {
	dir   string // objects/pack on the host; never in an error
	bases *baseCache

	// reloadMu serialises reloads; nextID is theirs.
	reloadMu sync.Mutex
	nextID   uint64

	// mu guards list and closed. Readers hold it only while they find and
	// pin a pack; decoding runs without it.
	mu     sync.RWMutex
	list   []*pack
	closed bool
}

// Limits of the pack reader.
const (
	// maxDeltaChain refuses a longer chain (git's default is 50, its
	// aggressive gc 250) as a cycle of REF_DELTAs or a corrupt pack.
	maxDeltaChain = 10000
	// baseCacheSize bounds the decoded delta bases kept. After a full
	// read of a 13,000-file, 100 MB tree (issue 18) it is full, and with
	// the decoded blobs left to the kernel's page cache it was the
	// largest thing the daemon held; with 16 MiB a cold full read of that
	// tree took as long as with 32 (within the noise of a shared
	// machine), and the daemon keeps 16 MiB less, about twice that in
	// RSS with the GC's headroom.
	baseCacheSize = 16 << 20
	// inflatePrealloc is the most memory a whole decode allocates before
	// the data shows up: a corrupt header may claim any size.
	inflatePrealloc = 8 << 20
	// maxDeflateRatio bounds what deflate can expand a byte to; a header
	// that claims more than that is corrupt.
	maxDeflateRatio = 1032
	packHeaderLen   = 12 // "PACK", version, object count
	packTrailerLen  = 20 // SHA-1 of everything before it
)

// Pack object types (gitformat-pack).
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

var errCorruptPack = errors.New("corrupt pack")

// objectsDir returns the objects directory of the git directory gitDir: the
// one of its common directory when it is a linked worktree's (a commondir
// file names it), as git and go-git's EnableDotGitCommonDir find it.
func objectsDir(gitDir string) string {
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		return filepath.Join(common, "objects")
	}
	return filepath.Join(gitDir, "objects")
}

// newPacks maps the packs of the objects directory objDir. A pack that
// cannot be read is left to go-git; the error says which.
func newPacks(objDir string) (*packs, error) {
	ps := &packs{dir: filepath.Join(objDir, "pack"), bases: newBaseCache(baseCacheSize)}
	return ps, ps.reload()
}

// reload reads the pack directory again: packs still there keep their
// mapping (a pack's name is its checksum), new ones are mapped, and the
// ones that left are retired (unmapped when their last reader is done).
// New indexes are decoded without ps.mu, so reads go on meanwhile from the
// packs already mapped.
func (ps *packs) reload() error {
	ps.reloadMu.Lock()
	defer ps.reloadMu.Unlock()
	ents, err := os.ReadDir(ps.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("gitfs: pack directory: %w", unwrapPath(err))
	}
	ps.mu.RLock()
	old := make(map[string]*pack, len(ps.list))
	for _, p := range ps.list {
		old[p.name] = p
	}
	ps.mu.RUnlock()
	var list, fresh []*pack
	var errs []error
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(base, "pack-") {
			continue
		}
		name := base + ".pack"
		if p := old[name]; p != nil {
			delete(old, name)
			list = append(list, p)
			continue
		}
		ps.nextID++
		p, err := openPack(filepath.Join(ps.dir, base), name, ps.nextID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list = append(list, p)
		fresh = append(fresh, p)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		for _, p := range fresh {
			p.release()
		}
		return fs.ErrClosed
	}
	ps.list = list
	for _, p := range old {
		p.release() // the list's reference
	}
	return errors.Join(errs...)
}

// close retires every pack; streams still open keep theirs until they close.
func (ps *packs) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return
	}
	ps.closed = true
	for _, p := range ps.list {
		p.release()
	}
	ps.list = nil
	ps.bases.clear()
}

// pin returns the pack holding h and h's offset in it, with a reference
// the caller releases.
func (ps *packs) pin(h plumbing.Hash) (*pack, int64, bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, p := range ps.list {
		if off, ok := p.idx.find(h); ok {
			p.refs.Add(1)
			return p, off, true
		}
	}
	return nil, 0, false
}

// size returns the size of object h from its headers: the pack object
// header, or for a delta the target size at the start of the delta data.
// ok is false when h is in no pack.
func (ps *packs) size(h plumbing.Hash) (n int64, ok bool, err error) {
	p, off, ok := ps.pin(h)
	if !ok {
		return 0, false, nil
	}
	defer p.release()
	defer onFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	n, err = p.size(off)
	return n, true, p.wrap(off, err)
}

// open returns the content of object h, its size and type. A whole object
// streams from the mapping (the reader verifies length and checksum as it
// reaches the end); a delta is resolved in memory. ok is false when h is in
// no pack or its chain leaves the pack.
func (ps *packs) open(h plumbing.Hash) (r io.ReadCloser, n int64, t plumbing.ObjectType, ok bool, err error) {
	p, off, ok := ps.pin(h)
	if !ok {
		return nil, 0, 0, false, nil
	}
	defer func() {
		if r == nil {
			p.release()
		}
	}()
	defer onFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	typ, size, pos, err := p.header(off)
	if err != nil {
		return nil, 0, 0, true, p.wrap(off, err)
	}
	p.touch(size)
	if t := wholeType(typ); t != plumbing.InvalidObject {
		z, err := getInflater(p.stream(pos))
		if err != nil {
			return nil, 0, 0, true, p.wrap(off, err)
		}
		return &packReader{p: p, z: z, off: off, size: size}, size, t, true, nil
	}
	data, t, ok, err := p.resolve(ps.bases, off)
	if !ok || err != nil {
		return nil, 0, 0, ok, p.wrap(off, err)
	}
	p.release()
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), t, true, nil
}

// bytes returns the whole content of object h and its type. The slice may
// be shared with the base cache: callers must not modify it.
func (ps *packs) bytes(h plumbing.Hash) (data []byte, t plumbing.ObjectType, ok bool, err error) {
	p, off, ok := ps.pin(h)
	if !ok {
		return nil, 0, false, nil
	}
	defer p.release()
	defer onFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	data, t, ok, err = p.resolve(ps.bases, off)
	p.touch(int64(len(data)))
	return data, t, ok, p.wrap(off, err)
}

// onFault turns a panic of the decoder (a fault on a mapping truncated
// under it, or a bounds check this file missed) into errCorruptPack: the
// last line of defence, every byte read from a mapping is bounds-checked.
func onFault(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", errCorruptPack, r)
	}
}

// pack is one mapped pack file and its index.
type pack struct {
	id   uint64 // distinguishes packs in the base cache
	name string // "pack-<checksum>.pack", for errors
	data []byte // the read-only mapping
	idx  *packIndex
	// idxData is the mapping idx reads, nil when idx lives in memory
	// (tests build packs by hand).
	idxData []byte
	// refs counts the pack list's reference and every reader's; the last
	// release unmaps.
	refs atomic.Int64
	// read counts the bytes of objects read since the mapping's pages
	// last left the process (touch); trims counts those times.
	read, trims atomic.Int64
}

// trimEvery is how many bytes of objects are read from a pack between
// two trims of its mapping (touch).
var trimEvery int64 = 32 << 20

// touch counts n bytes of objects read from p; every trimEvery bytes, the
// pages of its mapping leave the process (MADV_DONTNEED: they stay in the
// page cache, and a later read maps them again, a minor fault each). A
// full read of a commit touches every page of its pack, which counted in
// the daemon's resident set for as long as the mount lived, though the
// kernel holds them as page cache anyway.
func (p *pack) touch(n int64) {
	if p.read.Add(n) < trimEvery {
		return
	}
	p.read.Store(0)
	if unix.Madvise(p.data, unix.MADV_DONTNEED) == nil {
		p.trims.Add(1)
	}
}

// openPack maps base.idx and base.pack and checks that they belong
// together. The index is read in place (see packIndex), so opening a pack
// costs the same whatever number of objects it holds.
func openPack(base, name string, id uint64) (_ *pack, err error) {
	fail := func(err error) (*pack, error) {
		return nil, fmt.Errorf("gitfs: %s: %w", name, err)
	}
	idxData, err := mapFile(base+".idx", 0)
	if err != nil {
		return fail(err)
	}
	data, err := mapFile(base+".pack", packHeaderLen+packTrailerLen)
	if err != nil {
		unix.Munmap(idxData)
		return fail(err)
	}
	p := &pack{id: id, name: name, data: data, idxData: idxData}
	p.refs.Store(1)
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	defer onFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if p.idx, err = parseIndex(idxData); err != nil {
		return fail(err)
	}
	v := uint32(data[4])<<24 | uint32(data[5])<<16 | uint32(data[6])<<8 | uint32(data[7])
	switch {
	case string(data[:4]) != "PACK" || (v != 2 && v != 3):
		return fail(fmt.Errorf("%w: bad header", errCorruptPack))
	case !bytes.Equal(data[len(data)-packTrailerLen:], p.idx.packChecksum()):
		return fail(fmt.Errorf("%w: does not match its index", errCorruptPack))
	}
	return p, nil
}

// mapFile maps the file at path read-only; it must hold at least min
// bytes (and one, as mmap cannot map nothing). Errors name no host path.
func mapFile(path string, min int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if st.Size() < max(min, 1) || st.Size() != int64(int(st.Size())) {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptPack, st.Size())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return data, nil
}

func (p *pack) release() {
	if p.refs.Add(-1) == 0 {
		unix.Munmap(p.data)
		if p.idxData != nil {
			unix.Munmap(p.idxData)
		}
	}
}

// wrap names the pack and offset in a decoding error.
func (p *pack) wrap(off int64, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gitfs: %s at %d: %w", p.name, off, err)
}

// end is where object data ends: the trailer follows.
func (p *pack) end() int64 { return int64(len(p.data)) - packTrailerLen }

// stream returns the compressed bytes from pos to the trailer.
func (p *pack) stream(pos int64) []byte { return p.data[pos:p.end()] }

// header parses the object header at off: type, size (of the object, or
// of the delta data) and the position after the header.
func (p *pack) header(off int64) (typ byte, size, pos int64, err error) {
	end := p.end()
	if off < packHeaderLen || off >= end {
		return 0, 0, 0, fmt.Errorf("%w: offset out of range", errCorruptPack)
	}
	c := p.data[off]
	typ, size, pos = c>>4&7, int64(c&15), off+1
	for shift := 4; c&0x80 != 0; shift += 7 {
		if pos >= end || shift > 56 {
			return 0, 0, 0, fmt.Errorf("%w: bad object header", errCorruptPack)
		}
		c = p.data[pos]
		pos++
		size |= int64(c&0x7f) << shift
	}
	return typ, size, pos, nil
}

// deltaBase parses the base reference after a delta's header at pos and
// returns the base's offset in this pack (found=false for a REF_DELTA
// whose base is elsewhere) and where the delta data starts.
func (p *pack) deltaBase(typ byte, off, pos int64) (base, data int64, found bool, err error) {
	end := p.end()
	if typ == objRefDelta {
		if pos+int64(len(plumbing.ZeroHash)) > end {
			return 0, 0, false, fmt.Errorf("%w: truncated base id", errCorruptPack)
		}
		var h plumbing.Hash
		copy(h[:], p.data[pos:])
		base, found = p.idx.find(h)
		return base, pos + int64(len(h)), found, nil
	}
	// OFS_DELTA: a big-endian base-128 distance back, each continuation
	// adding one (gitformat-pack "offset encoding").
	if pos >= end {
		return 0, 0, false, fmt.Errorf("%w: truncated base offset", errCorruptPack)
	}
	c := p.data[pos]
	pos++
	rel := int64(c & 0x7f)
	for c&0x80 != 0 {
		if pos >= end || rel >= 1<<55 {
			return 0, 0, false, fmt.Errorf("%w: bad base offset", errCorruptPack)
		}
		c = p.data[pos]
		pos++
		rel = (rel+1)<<7 | int64(c&0x7f)
	}
	if rel <= 0 || off-rel < packHeaderLen {
		return 0, 0, false, fmt.Errorf("%w: base offset out of range", errCorruptPack)
	}
	return off - rel, pos, true, nil
}

func wholeType(typ byte) plumbing.ObjectType {
	switch typ {
	case objCommit:
		return plumbing.CommitObject
	case objTree:
		return plumbing.TreeObject
	case objBlob:
		return plumbing.BlobObject
	case objTag:
		return plumbing.TagObject
	}
	return plumbing.InvalidObject
}

// size returns the size of the object at off from headers only.
func (p *pack) size(off int64) (int64, error) {
	typ, size, pos, err := p.header(off)
	if err != nil {
		return 0, err
	}
	if wholeType(typ) != plumbing.InvalidObject {
		return size, nil
	}
	if typ != objOfsDelta && typ != objRefDelta {
		return 0, fmt.Errorf("%w: object type %d", errCorruptPack, typ)
	}
	// The target size is the second varint of the delta data; the base
	// need not be in this pack to read it.
	_, pos, _, err = p.deltaBase(typ, off, pos)
	if err != nil {
		return 0, err
	}
	head, err := inflateHead(p.stream(pos), min(size, 2*maxVarint))
	if err != nil {
		return 0, err
	}
	_, rest, err := leb128(head)
	if err != nil {
		return 0, err
	}
	target, _, err := leb128(rest)
	return target, err
}

// link is one delta on a chain being resolved.
type link struct {
	off, data, size int64 // the object's offset, its delta data, its inflated size
}

// resolve returns the content and type of the object at off, resolving
// deltas. ok is false when a REF_DELTA's base is not in this pack.
func (p *pack) resolve(bases *baseCache, off int64) (data []byte, t plumbing.ObjectType, ok bool, err error) {
	var chain []link
	for cur := off; ; {
		if e, hit := bases.get(p.id, cur); hit {
			data, t = e.data, e.typ
			break
		}
		typ, size, pos, err := p.header(cur)
		if err != nil {
			return nil, 0, true, err
		}
		if t = wholeType(typ); t != plumbing.InvalidObject {
			if data, err = inflate(p.stream(pos), size); err != nil {
				return nil, 0, true, err
			}
			if len(chain) > 0 {
				bases.put(p.id, cur, data, t)
			}
			break
		}
		if typ != objOfsDelta && typ != objRefDelta {
			return nil, 0, true, fmt.Errorf("%w: object type %d", errCorruptPack, typ)
		}
		if len(chain) == maxDeltaChain {
			return nil, 0, true, fmt.Errorf("%w: delta chain longer than %d", errCorruptPack, maxDeltaChain)
		}
		base, start, found, err := p.deltaBase(typ, cur, pos)
		switch {
		case err != nil:
			return nil, 0, true, err
		case !found:
			return nil, 0, false, nil // the base is elsewhere: go-git's
		}
		chain = append(chain, link{off: cur, data: start, size: size})
		cur = base
	}
	for i := len(chain) - 1; i >= 0; i-- {
		l := chain[i]
		delta, err := inflate(p.stream(l.data), l.size)
		if err != nil {
			return nil, 0, true, err
		}
		if data, err = packfile.PatchDelta(data, delta); err != nil {
			return nil, 0, true, fmt.Errorf("%w: %w", errCorruptPack, err)
		}
		if i > 0 {
			bases.put(p.id, l.off, data, t)
		}
	}
	return data, t, true, nil
}

// maxVarint is the longest size varint of a delta header (64 bits).
const maxVarint = 10

// leb128 decodes the little-endian base-128 size at the start of b.
func leb128(b []byte) (int64, []byte, error) {
	var n uint64
	for i := 0; i < len(b) && i < maxVarint; i++ {
		n |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if n > 1<<62 {
				break
			}
			return int64(n), b[i+1:], nil
		}
	}
	return 0, nil, fmt.Errorf("%w: bad delta header", errCorruptPack)
}

// inflater is a pooled zlib reader and the byte reader it reads from.
// Resetting one costs far less than a new reader's allocations.
type inflater struct {
	br bytes.Reader
	z  io.ReadCloser // a zlib.Resetter
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// getInflater returns a reader of the zlib stream at the start of src.
func getInflater(src []byte) (*inflater, error) {
	f := inflaters.Get().(*inflater)
	f.br.Reset(src)
	var err error
	if f.z == nil {
		f.z, err = zlib.NewReader(&f.br)
	} else {
		err = f.z.(zlib.Resetter).Reset(&f.br, nil)
	}
	if err != nil {
		f.z = nil
		putInflater(f)
		return nil, fmt.Errorf("%w: %w", errCorruptPack, err)
	}
	return f, nil
}

func putInflater(f *inflater) {
	f.br.Reset(nil) // no reference into a mapping that may go away
	inflaters.Put(f)
}

// corrupt wraps an inflate error; a stream that ends early is a size
// mismatch.
func corrupt(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w: data ends early", errCorruptPack, ErrSizeMismatch)
	}
	return fmt.Errorf("%w: %w", errCorruptPack, err)
}

// inflate decompresses the zlib stream at the start of src, which must
// hold exactly size bytes, and checks its adler32 by reading to its end.
func inflate(src []byte, size int64) ([]byte, error) {
	if size < 0 || size/maxDeflateRatio > int64(len(src)) {
		return nil, fmt.Errorf("%w: %w: %d bytes cannot inflate to %d", errCorruptPack, ErrSizeMismatch, len(src), size)
	}
	f, err := getInflater(src)
	if err != nil {
		return nil, err
	}
	defer putInflater(f)
	// A corrupt header may claim any size: allocate as the data arrives.
	out := make([]byte, min(size, inflatePrealloc))
	n := 0
	for int64(n) < size {
		if n == len(out) {
			out = slices.Grow(out, int(min(size, 2*int64(n)))-n)
			out = out[:cap(out)]
		}
		k, err := f.z.Read(out[n:min(int64(len(out)), size)])
		n += k
		if err == io.EOF && int64(n) == size {
			return out[:n], nil // the reader checked the checksum at EOF
		}
		if err != nil {
			return nil, corrupt(err)
		}
	}
	if err := atEnd(f.z); err != nil {
		return nil, err
	}
	return out[:n], nil
}

// headPrefix is how much of a stream inflateHead reads first: enough for
// the zlib header, a dynamic Huffman table and the first bytes of data in
// all but contrived streams. Inflate works a block at a time, so without
// the bound a size read would inflate up to 32 KiB of content to use ten
// bytes of it.
const headPrefix = 512

// inflateHead decompresses the first n bytes of the zlib stream at the
// start of src.
func inflateHead(src []byte, n int64) ([]byte, error) {
	if len(src) > headPrefix {
		// A prefix inflates to a prefix of the output, or fails: then
		// the whole stream is read.
		if b, err := inflateHeadOf(src[:headPrefix], n); err == nil {
			return b, nil
		}
	}
	return inflateHeadOf(src, n)
}

func inflateHeadOf(src []byte, n int64) ([]byte, error) {
	f, err := getInflater(src)
	if err != nil {
		return nil, err
	}
	defer putInflater(f)
	buf := make([]byte, n)
	if _, err := io.ReadFull(f.z, buf); err != nil {
		return nil, corrupt(err)
	}
	return buf, nil
}

// atEnd checks that z has no more data: it reads to EOF, which makes zlib
// verify the stream's adler32.
func atEnd(z io.Reader) error {
	var one [1]byte
	for range 16 {
		n, err := z.Read(one[:])
		switch {
		case n > 0:
			return fmt.Errorf("%w: %w: more data than the header says", errCorruptPack, ErrSizeMismatch)
		case err == io.EOF:
			return nil
		case err != nil:
			return corrupt(err)
		}
	}
	return fmt.Errorf("%w: stream does not end", errCorruptPack)
}

// packReader streams a whole object from its mapping. It holds a reference
// to the pack until closed. Read never returns more than the header's size,
// and reports an error, not io.EOF, when the stream and the header disagree
// or the checksum fails.
type packReader struct {
	p    *pack
	z    *inflater
	off  int64
	size int64
	n    int64 // bytes returned so far
	err  error // sticky
	done bool  // closed
}

func (r *packReader) Read(b []byte) (n int, err error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.done {
		return 0, fs.ErrClosed
	}
	defer func() {
		if err != nil {
			r.err = err
		}
	}()
	defer func() {
		if rec := recover(); rec != nil {
			n, err = 0, r.p.wrap(r.off, fmt.Errorf("%w: %v", errCorruptPack, rec))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if len(b) == 0 && r.n < r.size {
		return 0, nil
	}
	if rest := r.size - r.n; int64(len(b)) > rest {
		b = b[:rest]
	}
	if len(b) > 0 {
		n, err = r.z.z.Read(b)
		r.n += int64(n)
		switch {
		case err == io.EOF && r.n < r.size:
			return n, r.p.wrap(r.off, corrupt(err))
		case err == io.EOF:
			return n, io.EOF // zlib verified the checksum
		case err != nil:
			return n, r.p.wrap(r.off, corrupt(err))
		case r.n < r.size:
			return n, nil
		}
	}
	// All the header's bytes are out: the stream must end here.
	if err := atEnd(r.z.z); err != nil {
		return n, r.p.wrap(r.off, err)
	}
	return n, io.EOF
}

func (r *packReader) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	putInflater(r.z)
	r.p.release()
	return nil
}

// baseCache holds decoded delta bases, bounded in bytes, the least
// recently used evicted first. Its slices are shared and never modified.
type baseCache struct {
	max  int64
	hits atomic.Int64 // for tests and measurements
	mu   sync.Mutex
	lru  *lru.LRU[baseKey, baseEntry]
}

type baseKey struct {
	pack uint64
	off  int64
}

type baseEntry struct {
	data []byte
	typ  plumbing.ObjectType
}

func newBaseCache(max int64) *baseCache {
	// A base costs its capacity, not its length: a patched base is a
	// grown buffer, up to twice its length, all of it held.
	return &baseCache{max: max, lru: lru.New[baseKey](max, func(e baseEntry) int64 { return int64(cap(e.data)) }, nil)}
}

func (c *baseCache) get(pack uint64, off int64) (baseEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(baseKey{pack, off})
	if ok {
		c.hits.Add(1)
	}
	return e, ok
}

// put adds a base; one larger than a quarter of the cache is not kept, so
// a single large file does not flush every other chain.
func (c *baseCache) put(pack uint64, off int64, data []byte, typ plumbing.ObjectType) {
	if int64(cap(data)) > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(baseKey{pack, off}, baseEntry{data: data, typ: typ})
}

func (c *baseCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Clear()
}
