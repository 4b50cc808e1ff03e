package codeindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"regexp/syntax"
	"slices"
	"sort"
	"sync"

	"github.com/google/codesearch/index"
	"golang.org/x/sys/unix"
)

// ErrCorrupt is the error of a file that is not a whole index of the
// expected tree.
var ErrCorrupt = errors.New("corrupt index")

var errTooBig = errors.New("index: postings over 4 GiB")

// Index is an index, checked. Its names and trigram table are in memory;
// its posting lists, the bulk of it, are read from the file when needed
// for an index opened from a file (Open), so that a mount's index costs
// the daemon a fraction of its size; an index just built
// (Builder.Index) reads them from the builder's memory until File has
// written its file's bytes, and from those after. It is immutable and
// safe for concurrent use.
type Index struct {
	names []string
	scan  []uint32
	tris  []byte // ntri × 12
	// f holds the posting lists at postAt, postLen bytes (Open), and
	// head, an anonymous mapping, the part of the file before them,
	// which tris is part of; unmapped by Close, under mu, which every
	// read of tris holds.
	f       *os.File
	head    []byte
	postAt  int64
	postLen uint64

	// An index built in memory: its posting lists in the builder's
	// memory (built) until File writes the file's bytes (file), and in
	// post, their part of it, after.
	fileOnce sync.Once
	fileErr  error
	mu       sync.RWMutex // guards built, post and closed: File and Close free built
	built    *built
	post     []byte
	file     []byte
	closed   bool
}

// errClosed is a posting list, or the file, of an index read after Close.
var errClosed = errors.New("codeindex: index closed")

// File returns the bytes of the file of an index built in memory
// ([Builder.Index]), for [Publish], and serves the index from them: the
// builder's memory is released. It returns nil for an index not built
// (opened from a file), and an error for one closed before it was done.
// The first call does the work; later ones return what it did.
func (ix *Index) File() ([]byte, error) {
	ix.fileOnce.Do(func() {
		ix.mu.RLock()
		bt, closed := ix.built, ix.closed
		var data []byte
		if bt != nil {
			data, ix.fileErr = bt.b.writeFile(bt.l)
		}
		ix.mu.RUnlock()
		switch {
		case closed:
			ix.fileErr = errClosed
			return
		case bt == nil || ix.fileErr != nil:
			return
		}
		seal(data)
		ix.mu.Lock()
		defer ix.mu.Unlock()
		if ix.closed { // meanwhile
			ix.fileErr = errClosed
			return
		}
		ix.built.b.Close()
		ix.built = nil
		ix.post = data[bt.l.bodyLen-ix.postLen : bt.l.bodyLen]
		ix.file = data
	})
	return ix.file, ix.fileErr
}

// Close releases the file of an index opened from one, or the memory of
// one built; a posting list read after Close is an error.
func (ix *Index) Close() error {
	ix.mu.Lock()
	ix.closed = true
	if ix.built != nil {
		ix.built.b.Close()
		ix.built = nil
	}
	var err error
	if ix.head != nil {
		err = unix.Munmap(ix.head)
		ix.head, ix.tris = nil, nil
	}
	ix.mu.Unlock()
	if ix.f == nil {
		return err
	}
	return errors.Join(err, ix.f.Close())
}

// Len returns the number of files.
func (ix *Index) Len() int { return len(ix.names) }

// Name returns the name of file id.
func (ix *Index) Name(id uint32) string { return ix.names[id] }

// Scanned returns how many files the index does not hold.
func (ix *Index) Scanned() int { return len(ix.scan) }

// Open opens the index in file name and checks it whole: its checksum,
// its structure, and that it is the index of key. Any failure but a
// missing file is an error wrapping ErrCorrupt. The index keeps the file
// open and reads its posting lists from it (pread) when a query needs
// them: a file changed in place after Open (it never is: Publish renames
// a new file over the old) makes a short read an error, never a guess.
func Open(name string, key []byte) (_ *Index, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	le := binary.LittleEndian
	minLen := int64(len(magic) + 4 + len(endMagic) + 4)
	if size < minLen {
		return nil, corrupt("no header")
	}
	tail := make([]byte, 4+len(endMagic))
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if string(tail[4:]) != endMagic {
		return nil, corrupt("truncated")
	}
	end := size - int64(len(tail))
	crc := crc32.New(castagnoli)
	if n, err := io.CopyBuffer(crc, io.NewSectionReader(f, 0, end), make([]byte, 256<<10)); err != nil || n != end {
		return nil, corrupt("truncated")
	}
	if crc.Sum32() != le.Uint32(tail) {
		return nil, corrupt("checksum mismatch")
	}
	// The header, for where the posting lists start; then all before them.
	hdr := make([]byte, min(end, int64(len(magic)+4+len(key)+3*4+4*8)))
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	postOff, err := postingsAt(hdr, key)
	if err != nil {
		return nil, err
	}
	if postOff > uint64(end) {
		return nil, corrupt("bad offsets")
	}
	head, err := populated(int(postOff))
	if err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(head, 0); err != nil {
		_ = unix.Munmap(head)
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	ix, err := parseBody(head, uint64(end), key)
	if err != nil {
		_ = unix.Munmap(head)
		return nil, err
	}
	ix.f, ix.head, ix.postAt, ix.postLen = f, head, int64(postOff), uint64(end)-postOff
	return ix, nil
}

// populated returns n bytes of memory of their own, mapped with their
// pages in place: the head of a large index (megabytes) would be fresh
// pages of the heap, which a new daemon faults in one by one (on a virtual
// machine some 15 µs a page, 18 times what mapping them at once costs:
// 40 ms for the index of a 14,000-file tree). Unmap it when done.
func populated(n int) ([]byte, error) {
	if n == 0 {
		n = 1 // a mapping of nothing is refused
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("codeindex: memory for the index: %w", err)
	}
	return b, nil
}

// postingsAt returns where the posting lists start, from the header.
func postingsAt(hdr, key []byte) (uint64, error) {
	p := len(magic)
	if len(hdr) < p+4 || string(hdr[:p]) != magic {
		return 0, corrupt("no header")
	}
	klen := int(binary.LittleEndian.Uint32(hdr[p:]))
	p += 4
	if klen != len(key) || p+klen+3*4+4*8 > len(hdr) || !bytes.Equal(hdr[p:p+klen], key) {
		return 0, corrupt("another tree's index")
	}
	return binary.LittleEndian.Uint64(hdr[p+klen+12+3*8:]), nil
}

func corrupt(why string) error { return fmt.Errorf("%w: %s", ErrCorrupt, why) }

func parse(data, key []byte) (*Index, error) {
	le := binary.LittleEndian
	if len(data) < len(magic)+4+len(endMagic)+4 || string(data[:len(magic)]) != magic {
		return nil, corrupt("no header")
	}
	end := len(data) - len(endMagic) - 4
	if string(data[end+4:]) != endMagic {
		return nil, corrupt("truncated")
	}
	if crc32.Checksum(data[:end], castagnoli) != le.Uint32(data[end:]) {
		return nil, corrupt("checksum mismatch")
	}
	return parseChecked(data, key)
}

// parseChecked is parse of data whose header, trailer and checksum are
// known good.
func parseChecked(data, key []byte) (*Index, error) {
	end := len(data) - len(endMagic) - 4
	ix, err := parseBody(data[:end], uint64(end), key)
	if err != nil {
		return nil, err
	}
	ix.post = data[end-int(ix.postLen) : end]
	return ix, nil
}

// parseBody checks and reads the body of an index, of bodyLen bytes, from
// body, which holds at least all of it before the posting lists. The
// index it returns has its postLen set, not its postings.
func parseBody(body []byte, bodyLen uint64, key []byte) (*Index, error) {
	le := binary.LittleEndian
	p := len(magic)
	klen := int(le.Uint32(body[p:]))
	p += 4
	if klen != len(key) || p+klen+3*4+4*8 > len(body) || !bytes.Equal(body[p:p+klen], key) {
		return nil, corrupt("another tree's index")
	}
	p += klen
	nfiles, nscan, ntri := le.Uint32(body[p:]), le.Uint32(body[p+4:]), le.Uint32(body[p+8:])
	p += 12
	var offs [4]uint64
	for i := range offs {
		offs[i] = le.Uint64(body[p:])
		p += 8
	}
	namesOff, scanOff, triOff, postOff := offs[0], offs[1], offs[2], offs[3]
	if namesOff != uint64(p) || scanOff < namesOff || triOff < scanOff || postOff < triOff ||
		postOff > uint64(len(body)) || postOff > bodyLen || postOff-triOff != uint64(ntri)*12 {
		return nil, corrupt("bad offsets")
	}
	ix := &Index{tris: body[triOff:postOff], postLen: bodyLen - postOff}
	// Names.
	nb := body[namesOff:scanOff]
	ix.names = make([]string, 0, min(int(nfiles), len(nb)))
	for range nfiles {
		l, n := binary.Uvarint(nb)
		if n <= 0 || l > uint64(len(nb)-n) {
			return nil, corrupt("bad names")
		}
		ix.names = append(ix.names, string(nb[n:n+int(l)]))
		nb = nb[n+int(l):]
	}
	if len(nb) != 0 {
		return nil, corrupt("bad names")
	}
	// Scan list.
	sb := body[scanOff:triOff]
	last := uint64(0)
	for i := range nscan {
		d, n := binary.Uvarint(sb)
		if n <= 0 || (i > 0 && d == 0) || last+d >= uint64(nfiles) {
			return nil, corrupt("bad scan list")
		}
		last += d
		ix.scan = append(ix.scan, uint32(last))
		sb = sb[n:]
	}
	if len(sb) != 0 {
		return nil, corrupt("bad scan list")
	}
	// Trigram table: sorted, offsets in order and inside the postings.
	prevTri, prevOff := int64(-1), uint64(0)
	for i := range int(ntri) {
		t, off := le.Uint32(ix.tris[12*i:]), uint64(le.Uint32(ix.tris[12*i+4:]))
		if int64(t) <= prevTri || t >= 1<<24 || off < prevOff || off > ix.postLen {
			return nil, corrupt("bad trigram table")
		}
		prevTri, prevOff = int64(t), off
	}
	return ix, nil
}

// postingsMasks returns the ids of the files holding trigram t, decoded
// and checked against the file count (a bad list is an error, not a
// guess), with each file's follow mask when masks.
func (ix *Index) postingsMasks(t uint32, masks bool) ([]uint32, []uint8, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed && ix.tris == nil { // unmapped
		return nil, nil, errClosed
	}
	le := binary.LittleEndian
	n := len(ix.tris) / 12
	i := sort.Search(n, func(i int) bool { return le.Uint32(ix.tris[12*i:]) >= t })
	if i == n || le.Uint32(ix.tris[12*i:]) != t {
		return nil, nil, nil
	}
	off, count := le.Uint32(ix.tris[12*i+4:]), le.Uint32(ix.tris[12*i+8:])
	end := uint32(ix.postLen)
	if i+1 < n {
		end = le.Uint32(ix.tris[12*(i+1)+4:])
	}
	if off > end {
		return nil, nil, corrupt("bad postings")
	}
	b, err := ix.postings(i, off, end)
	if err != nil {
		return nil, nil, err
	}
	out := make([]uint32, 0, min(int(count), len(b)))
	var ms []uint8
	if masks {
		ms = make([]uint8, 0, cap(out))
	}
	tag := uint64(0)
	for range count {
		e, m := binary.Uvarint(b)
		d := e >> maskBits
		if m <= 0 || d == 0 {
			return nil, nil, corrupt("bad postings")
		}
		tag += d
		if tag > uint64(len(ix.names)) {
			return nil, nil, corrupt("bad postings")
		}
		out = append(out, uint32(tag-1))
		if masks {
			ms = append(ms, uint8(e&(1<<maskBits-1)))
		}
		b = b[m:]
	}
	return out, ms, nil
}

// postings returns the bytes [off, end) of the posting lists, those of
// trigram i; the caller holds mu.
func (ix *Index) postings(i int, off, end uint32) ([]byte, error) {
	if ix.f == nil {
		switch {
		case ix.built != nil:
			return ix.built.postings(i), nil
		case ix.post == nil:
			return nil, errClosed
		}
		return ix.post[off:end], nil
	}
	b := make([]byte, end-off)
	if n, err := ix.f.ReadAt(b, ix.postAt+int64(off)); n < len(b) {
		return nil, fmt.Errorf("%w: postings: %v", ErrCorrupt, err)
	}
	return b, nil
}

// Query analyses re (as regexp/syntax parsed it, with the flags it is
// matched with) into the trigrams any match contains.
func Query(re *syntax.Regexp) *index.Query { return index.RegexpQuery(re) }

// Candidates returns the ids, ascending, of the files that may hold a match
// of q and of every literal in lits (see [Literals]): those whose trigrams
// satisfy q and whose trigrams of each literal are followed by its next
// bytes, and every file the index does not hold. all reports that
// neither can narrow the search (every file is a candidate); ids is then
// nil.
func (ix *Index) Candidates(q *index.Query, lits []Literal) (ids []uint32, all bool, err error) {
	m := memo{}
	ids, all, err = ix.eval(m, q)
	if err != nil {
		return nil, false, err
	}
	for _, l := range lits {
		if all || len(ids) > 0 {
			if ids, all, err = ix.narrow(m, ids, all, l); err != nil {
				return nil, false, err
			}
		}
	}
	if all {
		return nil, true, nil
	}
	return union(ids, ix.scan), false, nil
}

// maxVariants bounds the byte strings a literal's window stands for.
const maxVariants = 64

// narrow keeps of ids (every file when all) those where each trigram of
// the literal l is followed by one of l's next bytes.
func (ix *Index) narrow(m memo, ids []uint32, all bool, l Literal) ([]uint32, bool, error) {
	var set bitmap // the files one window allows, reused
	for i := 0; i+3 < len(l); i++ {
		if len(l[i])*len(l[i+1])*len(l[i+2]) > maxVariants {
			continue
		}
		var want uint8
		for _, c := range l[i+3] {
			want |= followBit(c)
		}
		set = set.reset(len(ix.names))
		for _, a := range l[i] {
			for _, b := range l[i+1] {
				for _, c := range l[i+2] {
					got, masks, err := m.get(ix, uint32(a)<<16|uint32(b)<<8|uint32(c))
					if err != nil {
						return nil, false, err
					}
					for j, id := range got {
						if masks[j]&want != 0 {
							set.add(id)
						}
					}
				}
			}
		}
		if all {
			ids, all = set.ids(), false
		} else {
			kept := ids[:0:0]
			for _, id := range ids {
				if set.has(id) {
					kept = append(kept, id)
				}
			}
			ids = kept
		}
		if len(ids) == 0 {
			return nil, false, nil
		}
	}
	return ids, all, nil
}

// bitmap is a set of file ids.
type bitmap []uint64

func (b bitmap) reset(n int) bitmap {
	words := (n + 63) / 64
	if cap(b) < words {
		return make(bitmap, words)
	}
	b = b[:words]
	clear(b)
	return b
}

func (b bitmap) add(id uint32)      { b[id/64] |= 1 << (id % 64) }
func (b bitmap) has(id uint32) bool { return b[id/64]&(1<<(id%64)) != 0 }

func (b bitmap) ids() []uint32 {
	var out []uint32
	for w, word := range b {
		for word != 0 {
			bit := uint32(bits.TrailingZeros64(word))
			out = append(out, uint32(w)*64+bit)
			word &= word - 1
		}
	}
	return out
}

// memo holds the posting lists one Candidates call decoded: the query
// and the literals ask for the same trigrams.
type memo map[uint32]posting

type posting struct {
	ids   []uint32
	masks []uint8
}

func (m memo) get(ix *Index, t uint32) ([]uint32, []uint8, error) {
	if p, ok := m[t]; ok {
		return p.ids, p.masks, nil
	}
	ids, masks, err := ix.postingsMasks(t, true)
	if err == nil {
		m[t] = posting{ids, masks}
	}
	return ids, masks, err
}

func (ix *Index) eval(m memo, q *index.Query) (ids []uint32, all bool, err error) {
	switch q.Op {
	case index.QAll:
		return nil, true, nil
	case index.QNone:
		return nil, false, nil
	case index.QAnd:
		all = true
		// The rarest trigram first: the intersections only shrink.
		lists := make([][]uint32, 0, len(q.Trigram))
		for _, t := range q.Trigram {
			l, _, err := m.get(ix, trigram(t))
			if err != nil {
				return nil, false, err
			}
			lists = append(lists, l)
		}
		slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
		for _, l := range lists {
			if all {
				ids, all = l, false
			} else {
				ids = intersect(ids, l)
			}
			if len(ids) == 0 {
				return nil, false, nil
			}
		}
		for _, sub := range q.Sub {
			s, sAll, err := ix.eval(m, sub)
			if err != nil {
				return nil, false, err
			}
			if sAll {
				continue
			}
			if all {
				ids, all = s, false
			} else {
				ids = intersect(ids, s)
			}
			if len(ids) == 0 {
				return nil, false, nil
			}
		}
		return ids, all, nil
	case index.QOr:
		for _, t := range q.Trigram {
			l, _, err := m.get(ix, trigram(t))
			if err != nil {
				return nil, false, err
			}
			ids = union(ids, l)
		}
		for _, sub := range q.Sub {
			s, sAll, err := ix.eval(m, sub)
			if err != nil || sAll {
				return nil, sAll, err
			}
			ids = union(ids, s)
		}
		return ids, false, nil
	}
	return nil, true, nil // an operator unknown here: assume the worst
}

func trigram(s string) uint32 {
	return uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2])
}

func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, min(len(a), len(b)))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func union(a, b []uint32) []uint32 {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// Publish writes data (an index file) to dir/name atomically: to a
// temporary file in dir, synced, then renamed over name, so that a reader
// sees the old file, no file, or the whole new one. A failed write (a full
// disk) removes the temporary file and publishes nothing.
func Publish(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return PublishTo(dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// PublishTo is Publish of what write writes.
func PublishTo(dir, name string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}
