// Package codeindex is a trigram index of the files of one immutable tree,
// for choosing the files a regular expression may match before a search
// reads them, as Russ Cox's codesearch does (and as described in "Regular
// Expression Matching with a Trigram Index").
//
// The analysis of a regular expression into a query of trigrams (AND, OR)
// is codesearch's own ([index.RegexpQuery]), which follows Go's
// regexp/syntax, case folding included. The storage is this package's, not
// codesearch's: codesearch's reader and writer call log.Fatal on a corrupt
// file or an I/O error, which would take a daemon down with them.
//
// # What is indexed
//
// Every file of the tree has an id, in the order the builder was given its
// names. Its content's trigrams (every three consecutive bytes) are
// indexed, with each byte that is not part of valid UTF-8 taken as U+FFFD,
// which is how Go's regexp reads it: a pattern is valid UTF-8, and what it
// matches in a file it matches in the file so read. Files the index cannot
// hold — binary (a NUL byte), larger than [MaxFileSize], or unreadable —
// are kept in a list of files to always scan: a query returns them as
// candidates whatever it asks, so a search never misses a match because
// of the index.
//
// # File format
//
// One file, little endian, written to a temporary name and renamed into
// place (so a reader never sees a torn file, and two builders of the same
// tree publish the same bytes). It ends with a CRC-32C of everything
// before it, checked by [Open] before anything is used; a file that fails
// any check is refused with [ErrCorrupt].
//
//	header   magic "VFSCIDX2", key length u32, key, nfiles u32, nscan u32,
//	         ntri u32, offsets (u64) of names, scan, trigrams, postings
//	names    nfiles × (uvarint length, bytes), in id order
//	scan     nscan × uvarint delta of ids
//	trigrams ntri × (trigram u32, postings offset u32, count u32), sorted
//	postings per trigram: count × uvarint (delta of (id+1)) << 6 | follow
//	         mask (see followBit)
//	trailer  CRC-32C u32 of all of the above, magic "VFSCEND2"
package codeindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"sync"
	"unicode/utf8"
)

// MaxFileSize is the largest file indexed; larger ones are always scanned.
const MaxFileSize = 8 << 20

const (
	magic    = "VFSCIDX2"
	endMagic = "VFSCEND2"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one posting: the delta of id+1 and the follow mask, in one
// uvarint.
func entry(delta uint32, mask uint8) uint64 { return uint64(delta)<<maskBits | uint64(mask) }

// maskBits is the width of a posting's follow mask: bit followBit(c) is set
// when the trigram is followed by byte c somewhere in the file, which lets
// a literal's consecutive trigrams be checked for adjacency (a four-byte
// window, up to the mask's collisions).
const maskBits = 6

func followBit(c byte) uint8 {
	// Whitespace follows most trigrams (word ends): a bucket of its own,
	// so that it does not stand in for a letter or a digit.
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return 1
	}
	return 2 << ((c ^ c>>3) % (maskBits - 1))
}

// shard indexes a contiguous range of ids; one goroutine adds to it.
type shard struct {
	lo, hi int
	// tab is, for every trigram, 1 + the index of its list in lists
	// (0 for none) << 8, and for the file being added its follow mask
	// with metBit set once the trigram is met in the file. It is a
	// private anonymous mapping, so that it costs memory for the pages of
	// trigrams met only, and its pages go back at once when it is done.
	tab    *[1 << 24]uint32
	tabMem region
	// has is a bit of every trigram with a list, for listing them in
	// order; hasWord a bit of every word of has that is not zero, so
	// that the listing skips the empty ones (most of them) unread.
	has     *[1 << 18]uint64
	hasWord [1 << 12]uint64
	lists   []plist
	posts   arena // the lists' entries
	// met is the file's distinct trigrams, in the order first met.
	met []uint32
	buf []byte // for transcoding invalid UTF-8
}

// list returns the posting list of trigram tri, nil for none.
func (s *shard) list(tri uint32) *plist {
	if s.tab == nil || s.has[tri>>6]&(1<<(tri&63)) == 0 {
		return nil
	}
	return &s.lists[s.tab[tri]>>8-1]
}

// metBit marks a trigram of tab met in the file being added.
const metBit = 0x80

// Builder builds an index of a fixed list of files. Add the content of
// each file (or mark it Scan) from one goroutine per shard, then Index
// (or Encode).
type Builder struct {
	names  []string
	scan   []bool
	shards []*shard
}

// NewBuilder returns a builder of the files names (their ids are their
// indexes), in shards ranges that can be filled concurrently.
func NewBuilder(names []string, shards int) *Builder {
	shards = max(1, min(shards, len(names)))
	b := &Builder{names: names, scan: make([]bool, len(names))}
	for k := range shards {
		b.shards = append(b.shards, &shard{lo: k * len(names) / shards, hi: (k + 1) * len(names) / shards})
	}
	return b
}

// Shards returns the number of shards.
func (b *Builder) Shards() int { return len(b.shards) }

// Range returns the ids of shard k: lo ≤ id < hi.
func (b *Builder) Range(k int) (lo, hi int) { return b.shards[k].lo, b.shards[k].hi }

// Scan marks file id as one the index does not hold: always a candidate.
func (b *Builder) Scan(id int) { b.scan[id] = true }

// Add indexes the content of file id, which must be in shard k, whose ids
// must be added in increasing order. data is not kept.
func (b *Builder) Add(k, id int, data []byte) {
	s := b.shards[k]
	if len(data) > MaxFileSize || bytes.IndexByte(data, 0) >= 0 {
		b.scan[id] = true
		return
	}
	if !utf8.Valid(data) {
		s.buf = transcode(s.buf[:0], data)
		data = s.buf
	}
	if len(data) < 3 {
		return
	}
	if s.tab == nil {
		s.tabMem, s.tab = newTable()
		s.has = new([1 << 18]uint64)
	}
	if cap(s.met) < len(data) {
		s.met = make([]uint32, len(data))
	}
	tag := uint32(id) + 1
	met := s.met[:distinct(s.tab, s.met[:len(data)], data)]
	for j := 0; j < len(met); j++ {
		j += s.post(met[j:], tag) // all but what needs a call
		if j == len(met) {
			break
		}
		tri := met[j] & (1<<24 - 1)
		e := s.tab[tri]
		slot := e >> 8
		if slot == 0 {
			s.lists = append(s.lists, plist{})
			slot = uint32(len(s.lists))
			s.has[tri>>6] |= 1 << (tri & 63)
			s.hasWord[tri>>12] |= 1 << (tri >> 6 & 63)
		}
		s.tab[tri] = slot << 8
		l := &s.lists[slot-1]
		if l.end-l.cur < maxEntryLen && !s.posts.grow(l) {
			continue
		}
		l.added(tag, uint32(binary.PutUvarint(s.posts.at(l.cur), entry(tag-l.last, uint8(e&(1<<maskBits-1))))))
	}
}

// post adds file tag to the lists of the trigrams met, up to the first
// that needs a new list, a new chunk or an entry of over two bytes (which
// Add does), and returns how many it added. Its loop calls nothing, so
// that the compiler keeps its values in registers.
func (s *shard) post(met []uint32, tag uint32) int {
	tab, lists, mem := s.tab[:], s.lists, s.posts.mem.b
	for j, tri := range met {
		tri &= 1<<24 - 1
		e := tab[tri]
		slot := e >> 8
		if slot == 0 {
			return j
		}
		l := &lists[slot-1]
		v := entry(tag-l.last, uint8(e&(1<<maskBits-1)))
		if l.end-l.cur < maxEntryLen || v >= 1<<14 {
			return j
		}
		tab[tri] = slot << 8
		// One or two bytes, without a branch.
		two := uint64(127-v) >> 63 // v ≥ 128
		binary.LittleEndian.PutUint16(mem[l.cur:], uint16(v&0x7f|two<<7|v<<1&0x7f00))
		l.added(tag, 1+uint32(two))
	}
	return len(met)
}

// distinct puts the distinct trigrams of data (at least 3 bytes) in met
// (as long as data), in the order first met, and returns how many; it
// leaves in tab each one's follow mask, with metBit. The loop is the
// build's: one load and two stores a byte, without a branch. It reads each
// trigram and its follower as one big-endian word, rather than shifting
// bytes into a window, which would make every byte wait for the last.
func distinct(tab *[1 << 24]uint32, met []uint32, data []byte) int {
	// The table as a slice: checked once, not at every byte.
	t, fb := tab[:], &followBits
	n := 0
	for len(data) >= 4 {
		w := binary.BigEndian.Uint32(data) // the trigram and its follower
		data = data[1:]
		tri := w >> 8
		was := t[tri]
		t[tri] = was | uint32(fb[uint8(w)]) | metBit
		met[n] = tri
		n += int(^was >> 7 & 1)
	}
	// The last trigram, followed by nothing.
	tri := uint32(data[0])<<16 | uint32(data[1])<<8 | uint32(data[2])
	was := t[tri]
	t[tri] = was | metBit
	met[n] = tri
	return n + int(^was>>7&1)
}

// followBits is followBit of every byte.
var followBits = func() (t [256]uint8) {
	for c := range t {
		t[c] = followBit(byte(c))
	}
	return t
}()

// transcode appends data to dst with every byte that is not part of valid
// UTF-8 replaced by U+FFFD, as Go's regexp decodes it.
func transcode(dst, data []byte) []byte {
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, data[:n]...)
		}
		data = data[n:]
	}
	return dst
}

// Index ends the build, as Encode does, and returns the index. Until
// [Index.File] writes the bytes of its file, its posting lists are read
// from the builder's: a search does not wait for the file, whose posting
// lists are most of the encoding's work.
func (b *Builder) Index(key []byte) (*Index, error) {
	l, err := b.layout(key)
	if err != nil {
		b.Close()
		return nil, err
	}
	ix, err := parseBody(l.head, l.bodyLen, key)
	if err != nil {
		b.Close()
		return nil, err
	}
	// The index takes the builder's memory: Close leaves it alone.
	ix.built = &built{b: &Builder{names: b.names, scan: b.scan, shards: b.shards}, l: l}
	b.shards = nil
	return ix, nil
}

// Encode returns the index, tagged with key (the tree id): the bytes of
// its file, in a buffer of their exact size. It ends the build: the
// builder's memory is released.
func (b *Builder) Encode(key []byte) ([]byte, error) {
	defer b.Close()
	l, err := b.layout(key)
	if err != nil {
		return nil, err
	}
	data, err := b.writeFile(l)
	if err != nil {
		return nil, err
	}
	seal(data)
	return data, nil
}

// layout is an index's file but for its posting lists: the bytes before
// them, and what places each trigram's list.
type layout struct {
	head    []byte    // header, names, scan list, trigram table
	tris    []triStat // the trigrams, in order
	bodyLen uint64    // head and the posting lists
}

// layout lists the trigrams and encodes everything of the file before
// the posting lists.
func (b *Builder) layout(key []byte) (*layout, error) {
	le := binary.LittleEndian
	for _, s := range b.shards {
		if s.posts.full {
			return nil, errNoRoom
		}
	}

	// Names and the scan list, in memory: small next to the postings.
	var names []byte
	for _, n := range b.names {
		names = binary.AppendUvarint(names, uint64(len(n)))
		names = append(names, n...)
	}
	var scan []byte
	nscan, last := 0, 0
	for id, s := range b.scan {
		if s {
			scan = binary.AppendUvarint(scan, uint64(id-last))
			last = id
			nscan++
		}
	}
	// The trigrams in order, from every shard's bitmap, with their
	// counts and the exact size of their merged posting lists (merging
	// re-encodes each shard's first delta). A trigram of a file marked
	// Scan after it was added stays: an extra candidate.
	var tris []triStat
	var postBytes uint64
	for sw := range 1 << 12 {
		var words uint64
		for _, s := range b.shards {
			words |= s.hasWord[sw]
		}
		for ; words != 0; words &= words - 1 {
			w := sw<<6 | bits.TrailingZeros64(words)
			var word uint64
			for _, s := range b.shards {
				if s.has != nil {
					word |= s.has[w]
				}
			}
			for ; word != 0; word &= word - 1 {
				t := triStat{tri: uint32(w)<<6 | uint32(bits.TrailingZeros64(word))}
				prev := uint32(0)
				for _, s := range b.shards {
					if l := s.list(t.tri); l != nil {
						first, n := s.posts.firstEntry(l)
						t.count += l.count
						t.size += uint32(uvarintLen(rebase(first, prev)) + int(l.size) - n)
						prev = l.last
					}
				}
				tris = append(tris, t)
				postBytes += uint64(t.size)
			}
		}
	}
	if postBytes >= 1<<32 {
		return nil, errTooBig
	}

	hdrLen := len(magic) + 4 + len(key) + 3*4 + 4*8
	namesOff := uint64(hdrLen)
	scanOff := namesOff + uint64(len(names))
	triOff := scanOff + uint64(len(scan))
	postOff := triOff + uint64(len(tris))*12
	out := make([]byte, 0, postOff)
	out = append(out, magic...)
	out = le.AppendUint32(out, uint32(len(key)))
	out = append(out, key...)
	out = le.AppendUint32(out, uint32(len(b.names)))
	out = le.AppendUint32(out, uint32(nscan))
	out = le.AppendUint32(out, uint32(len(tris)))
	for _, o := range []uint64{namesOff, scanOff, triOff, postOff} {
		out = le.AppendUint64(out, o)
	}
	out = append(out, names...)
	out = append(out, scan...)
	off := uint32(0)
	for _, t := range tris {
		out = le.AppendUint32(out, t.tri)
		out = le.AppendUint32(out, off)
		out = le.AppendUint32(out, t.count)
		off += t.size
	}
	return &layout{head: out, tris: tris, bodyLen: postOff + postBytes}, nil
}

// writeFile returns the bytes of the index file laid out by l, in a
// buffer of their exact size, but for the checksum, whose bytes it leaves
// zero (see seal).
func (b *Builder) writeFile(l *layout) ([]byte, error) {
	size := l.bodyLen + 4 + uint64(len(endMagic))
	out := make([]byte, 0, size)
	out = append(out, l.head...)
	// The posting lists, in as many parts as shards, written at once:
	// each part's place is known from the sizes.
	parts := len(b.shards)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p, i, at := 0, 0, uint64(len(out)); p < parts; p++ {
		j, end := i, at
		for ; j < len(l.tris) && (end-at)*uint64(parts-p) < l.bodyLen-at; j++ {
			end += uint64(l.tris[j].size)
		}
		part, dst, want := l.tris[i:j], out[at:at:end], end-at
		wg.Go(func() {
			if got := b.writePostings(dst, part); uint64(len(got)) != want {
				errs[p] = fmt.Errorf("codeindex: encoded %d bytes of postings of %d", len(got), want)
			}
		})
		i, at = j, end
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out = out[:l.bodyLen]
	out = binary.LittleEndian.AppendUint32(out, 0) // the checksum
	out = append(out, endMagic...)
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("codeindex: encoded %d bytes of %d", len(out), size)
	}
	return out, nil
}

// built is the posting lists of an index still in its builder's memory.
type built struct {
	b *Builder
	l *layout
}

// postings returns the posting list of the index's trigram i, as its
// file holds it.
func (bt *built) postings(i int) []byte {
	t := bt.l.tris[i : i+1]
	return bt.b.writePostings(make([]byte, 0, t[0].size), t)
}

// seal writes the checksum of the bytes of an index file.
func seal(data []byte) {
	end := len(data) - len(endMagic) - 4
	binary.LittleEndian.PutUint32(data[end:], crc32.Checksum(data[:end], castagnoli))
}

// writePostings appends the merged posting lists of tris to out.
func (b *Builder) writePostings(out []byte, tris []triStat) []byte {
	for _, t := range tris {
		prev := uint32(0)
		for _, s := range b.shards {
			l := s.list(t.tri)
			if l == nil {
				continue
			}
			first, n := s.posts.firstEntry(l)
			out = binary.AppendUvarint(out, rebase(first, prev))
			skip := n
			s.posts.chunks(l, func(data []byte) {
				out = append(out, data[skip:]...)
				skip = 0
			})
			prev = l.last
		}
	}
	return out
}

// triStat is one of the index's trigrams, with its count of postings
// and their bytes.
type triStat struct{ tri, count, size uint32 }

// errNoRoom is a build whose posting lists outgrew their arena.
var errNoRoom = errors.New("codeindex: no room for the posting lists (4 GiB a shard, or no memory)")

// Close releases the builder's memory, ending the build without an index
// (or after Encode; after Index, the index has the memory, and gives it
// back on its File or Close). Add must not be called after it.
func (b *Builder) Close() {
	for _, s := range b.shards {
		s.tabMem.free()
		s.posts.mem.free()
		s.tab, s.has, s.lists, s.met = nil, nil, nil, nil
	}
}

// rebase re-encodes a shard's first entry (its delta from 0) as the delta
// from prev, the previous shard's last id+1.
func rebase(first uint64, prev uint32) uint64 {
	abs := uint32(first >> maskBits)
	return entry(abs-prev, uint8(first&(1<<maskBits-1)))
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
