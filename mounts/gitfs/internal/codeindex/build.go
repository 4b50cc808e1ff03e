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
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

// MaxFileSize is the largest file indexed; larger ones are always scanned.
const MaxFileSize = 8 << 20

const (
	magic    = "VFSCIDX2"
	endMagic = "VFSCEND2"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// plist is one trigram's posting list in a shard: entries of the delta
// of id+1 (the first from 0) and the file's follow mask.
type plist struct {
	last  uint32 // id+1 of the last file added
	count uint32
	buf   []byte
}

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
	// seen is, for the file being added, every trigram's follow mask
	// with metBit set once the trigram is met; all zero between files.
	seen *[1 << 24]uint8
	// met is the file's distinct trigrams, in the order first met.
	met []uint32
	// top maps a trigram's first two bytes to a page of slots for the
	// third: 1 + an index into lists, 0 for none. A page is allocated on
	// first use, so memory follows the trigrams met, not 2^24.
	top   [1 << 16]*[256]int32
	lists []plist
	buf   []byte // for transcoding invalid UTF-8
}

// metBit marks a trigram of seen met in the file being added.
const metBit = 0x80

// Builder builds an index of a fixed list of files. Add the content of
// each file (or mark it Scan) from one goroutine per shard, then Encode.
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
	if s.seen == nil {
		s.seen = new([1 << 24]uint8)
	}
	if cap(s.met) < len(data) {
		s.met = make([]uint32, len(data))
	}
	tag := uint32(id) + 1
	for _, tri := range s.met[:distinct(s.seen, s.met[:len(data)], data)] {
		mask := s.seen[tri&(1<<24-1)] &^ metBit
		s.seen[tri&(1<<24-1)] = 0
		page := s.top[tri>>8&0xffff]
		if page == nil {
			page = new([256]int32)
			s.top[tri>>8&0xffff] = page
		}
		slot := page[tri&0xff]
		if slot == 0 {
			s.lists = append(s.lists, plist{})
			slot = int32(len(s.lists))
			page[tri&0xff] = slot
		}
		l := &s.lists[slot-1]
		l.buf = binary.AppendUvarint(l.buf, entry(tag-l.last, mask))
		l.last = tag
		l.count++
	}
}

// distinct puts the distinct trigrams of data (at least 3 bytes) in met
// (as long as data), in the order first met, and returns how many; it
// leaves in seen each one's follow mask, with metBit. The loop is the
// build's: one load and two stores a byte, without a branch.
func distinct(seen *[1 << 24]uint8, met []uint32, data []byte) int {
	n := 0
	w := uint32(data[0])<<16 | uint32(data[1])<<8 | uint32(data[2])
	for _, c := range data[3:] {
		tri := w & (1<<24 - 1)
		w = w<<8 | uint32(c)
		was := seen[tri]
		seen[tri] = was | followBits[c] | metBit
		met[n] = tri
		n += int(^was >> 7 & 1)
	}
	// The last trigram, followed by nothing.
	tri := w & (1<<24 - 1)
	was := seen[tri]
	seen[tri] = was | metBit
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

// Encode returns the index, tagged with key (the tree id): the bytes of
// its file, in a buffer of their exact size.
func (b *Builder) Encode(key []byte) ([]byte, error) {
	le := binary.LittleEndian
	for _, s := range b.shards {
		s.seen, s.met = nil, nil // the adds are done
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
	// The trigrams in order, from every shard's pages, with their
	// counts and the exact size of their merged posting lists (merging
	// re-encodes each shard's first delta). A trigram of a file marked
	// Scan after it was added stays: an extra candidate.
	type trigram struct{ tri, count, size uint32 }
	var tris []trigram
	var postBytes uint64
	for hi := range 1 << 16 {
		any := false
		for _, s := range b.shards {
			if s.top[hi] != nil {
				any = true
				break
			}
		}
		if !any {
			continue
		}
		for lo := range 256 {
			t := trigram{tri: uint32(hi)<<8 | uint32(lo)}
			prev := uint32(0)
			for _, s := range b.shards {
				if p := s.top[hi]; p != nil && p[lo] != 0 {
					l := &s.lists[p[lo]-1]
					first, n := binary.Uvarint(l.buf)
					t.count += l.count
					t.size += uint32(uvarintLen(rebase(first, prev)) + len(l.buf) - n)
					prev = l.last
				}
			}
			if t.count == 0 {
				continue
			}
			tris = append(tris, t)
			postBytes += uint64(t.size)
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
	size := postOff + postBytes + 4 + uint64(len(endMagic))
	out := make([]byte, 0, size)
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
	for _, t := range tris {
		prev := uint32(0)
		for _, s := range b.shards {
			p := s.top[t.tri>>8]
			if p == nil || p[t.tri&0xff] == 0 {
				continue
			}
			l := &s.lists[p[t.tri&0xff]-1]
			first, n := binary.Uvarint(l.buf)
			out = binary.AppendUvarint(out, rebase(first, prev))
			out = append(out, l.buf[n:]...)
			prev = l.last
		}
	}
	out = le.AppendUint32(out, crc32.Checksum(out, castagnoli))
	out = append(out, endMagic...)
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("codeindex: encoded %d bytes of %d", len(out), size)
	}
	return out, nil
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
