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
	"hash/crc32"
	"io"
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
// of id+1 (the first from 0) and the file's follow mask, the last entry
// pending until the next file or the end.
type plist struct {
	last  uint32 // id+1 of the last file added
	delta uint32 // the pending entry's delta
	mask  uint8  // the pending entry's follow mask
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

// flush writes the pending entry.
func (l *plist) flush() {
	if l.last != 0 && l.delta != 0 {
		l.buf = binary.AppendUvarint(l.buf, entry(l.delta, l.mask))
		l.delta = 0
	}
}

// shard indexes a contiguous range of ids; one goroutine adds to it.
type shard struct {
	lo, hi int
	// top maps a trigram's first two bytes to a page of slots for the
	// third: 1 + an index into lists, 0 for none. A page is allocated on
	// first use, so memory follows the trigrams met, not 2^24.
	top   [1 << 16]*[256]int32
	lists []plist
	buf   []byte // for transcoding invalid UTF-8
}

// Builder builds an index of a fixed list of files. Add the content of
// each file (or mark it Scan) from one goroutine per shard, then Write.
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
	tag := uint32(id) + 1
	tri := uint32(data[0])<<8 | uint32(data[1])
	last := len(data) - 1
	for i := 2; i <= last; i++ {
		tri = (tri<<8 | uint32(data[i])) & (1<<24 - 1)
		var bit uint8
		if i < last {
			bit = followBits[data[i+1]]
		}
		page := s.top[tri>>8]
		if page == nil {
			page = new([256]int32)
			s.top[tri>>8] = page
		}
		slot := page[tri&0xff]
		if slot == 0 {
			s.lists = append(s.lists, plist{})
			slot = int32(len(s.lists))
			page[tri&0xff] = slot
		}
		l := &s.lists[slot-1]
		if l.last == tag {
			l.mask |= bit
			continue
		}
		l.flush()
		l.delta, l.mask = tag-l.last, bit
		l.last = tag
		l.count++
	}
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

// countingWriter writes through w, keeping the CRC and the offset.
type countingWriter struct {
	w   io.Writer
	crc uint32
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	c.err = err
	return n, err
}

// WriteTo writes the index, tagged with key (the tree id), to w.
func (b *Builder) WriteTo(w io.Writer, key []byte) error {
	cw := &countingWriter{w: w}
	le := binary.LittleEndian
	for _, s := range b.shards {
		for i := range s.lists {
			s.lists[i].flush()
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
	// The trigrams in order, from every shard's pages. A trigram of a
	// file marked Scan after it was added stays: an extra candidate.
	var tris []uint32
	var counts []uint32
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
			var count uint32
			for _, s := range b.shards {
				if p := s.top[hi]; p != nil && p[lo] != 0 {
					count += s.lists[p[lo]-1].count
				}
			}
			if count == 0 {
				continue
			}
			tris = append(tris, uint32(hi)<<8|uint32(lo))
			counts = append(counts, count)
		}
	}
	// Exact sizes: merging re-encodes each shard's first delta.
	mergedSize := func(tri uint32) uint32 {
		var size uint32
		prev := uint32(0)
		for _, s := range b.shards {
			p := s.top[tri>>8]
			if p == nil || p[tri&0xff] == 0 {
				continue
			}
			l := &s.lists[p[tri&0xff]-1]
			first, n := binary.Uvarint(l.buf)
			size += uint32(uvarintLen(rebase(first, prev)) + len(l.buf) - n)
			prev = l.last
		}
		return size
	}
	sizes := make([]uint32, len(tris))
	for i, t := range tris {
		sizes[i] = mergedSize(t)
		postBytes += uint64(sizes[i])
	}
	if postBytes >= 1<<32 {
		return errTooBig
	}

	hdrLen := len(magic) + 4 + len(key) + 3*4 + 4*8
	namesOff := uint64(hdrLen)
	scanOff := namesOff + uint64(len(names))
	triOff := scanOff + uint64(len(scan))
	postOff := triOff + uint64(len(tris))*12
	hdr := make([]byte, 0, hdrLen)
	hdr = append(hdr, magic...)
	hdr = le.AppendUint32(hdr, uint32(len(key)))
	hdr = append(hdr, key...)
	hdr = le.AppendUint32(hdr, uint32(len(b.names)))
	hdr = le.AppendUint32(hdr, uint32(nscan))
	hdr = le.AppendUint32(hdr, uint32(len(tris)))
	for _, o := range []uint64{namesOff, scanOff, triOff, postOff} {
		hdr = le.AppendUint64(hdr, o)
	}
	cw.Write(hdr)
	cw.Write(names)
	cw.Write(scan)
	table := make([]byte, 0, 12*len(tris))
	off := uint32(0)
	for i, t := range tris {
		table = le.AppendUint32(table, t)
		table = le.AppendUint32(table, off)
		table = le.AppendUint32(table, counts[i])
		off += sizes[i]
	}
	cw.Write(table)
	var out []byte
	for _, t := range tris {
		out = out[:0]
		prev := uint32(0)
		for _, s := range b.shards {
			p := s.top[t>>8]
			if p == nil || p[t&0xff] == 0 {
				continue
			}
			l := &s.lists[p[t&0xff]-1]
			first, n := binary.Uvarint(l.buf)
			out = binary.AppendUvarint(out, rebase(first, prev))
			out = append(out, l.buf[n:]...)
			prev = l.last
		}
		cw.Write(out)
	}
	trailer := le.AppendUint32(nil, cw.crc)
	cw.Write(append(trailer, endMagic...))
	return cw.err
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
