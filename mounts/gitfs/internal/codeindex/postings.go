package codeindex

import "encoding/binary"

// A shard's posting lists live in its arena, each a chain of chunks that
// are never moved or copied: appending an entry writes it in place, and a
// full chunk is followed by a new one, about as large as the list so far.
// An entry never straddles two chunks; the bytes a chunk leaves unused at
// its end are zero, which no entry holds at its start or its end (an
// entry's uvarint is at least 1<<maskBits, and its last byte is its
// value's top seven bits, not zero).

// plist is one trigram's posting list in a shard: entries of the delta of
// id+1 (the first from 0) and the file's follow mask.
type plist struct {
	last  uint32 // id+1 of the last file added
	count uint32 // entries
	size  uint32 // bytes of the entries
	first uint32 // arena offset of the first chunk
	cur   uint32 // where the next entry goes
	end   uint32 // the end of the current chunk, where its link goes
}

// added accounts for the entry of file tag, n bytes, just written at cur.
func (l *plist) added(tag, n uint32) {
	l.cur += n
	l.size += n
	l.count++
	l.last = tag
}

const (
	linkLen     = 4 // a chunk ends in the arena offset of the next
	minChunk    = 16
	maxChunk    = 4096
	maxEntryLen = 6 // a uvarint of 32 + maskBits bits
	arenaStart  = 16 << 20
)

// arenaMax bounds an arena: offsets are 32 bits. A variable for the tests
// of a full arena.
var arenaMax uint64 = 1<<32 - 1<<20

// chunkLen is the data bytes of the chunk after size bytes of a list.
func chunkLen(size uint32) uint32 { return min(max(size, minChunk), maxChunk) }

// arena is the storage of a shard's posting lists, grown by doubling
// (remapped, not copied).
type arena struct {
	mem  region
	used uint32
	full bool // it could not grow: the build fails
}

// alloc returns the offset of n zero bytes, and false when the arena
// cannot grow.
func (a *arena) alloc(n uint32) (uint32, bool) {
	if a.mem.b == nil {
		a.mem = newRegion(int(min(arenaStart, arenaMax)))
	}
	if need := uint64(a.used) + uint64(n); need > uint64(len(a.mem.b)) {
		size := min(2*uint64(len(a.mem.b)), arenaMax)
		if size < need || !a.mem.grow(int(size)) {
			a.full = true
			return 0, false
		}
	}
	off := a.used
	a.used += n
	return off, true
}

// at returns the bytes of the arena from offset off.
func (a *arena) at(off uint32) []byte { return a.mem.b[off:] }

// grow starts a new chunk of l, and reports false when the arena is full.
func (a *arena) grow(l *plist) bool {
	c := chunkLen(l.size)
	off, ok := a.alloc(c + linkLen)
	if !ok {
		return false
	}
	if l.count == 0 {
		l.first = off
	} else {
		binary.LittleEndian.PutUint32(a.at(l.end), off)
	}
	l.cur, l.end = off, off+c
	return true
}

// chunks calls yield with the entries of l, a chunk at a time.
func (a *arena) chunks(l *plist, yield func([]byte)) {
	off, seen := l.first, uint32(0)
	for seen < l.size {
		c := chunkLen(seen)
		b := a.at(off)[:c+linkLen]
		data := b[:c]
		if seen+c > l.size {
			data = data[:l.size-seen]
		}
		for len(data) > 0 && data[len(data)-1] == 0 {
			data = data[:len(data)-1]
		}
		yield(data)
		seen += uint32(len(data))
		off = binary.LittleEndian.Uint32(b[c:])
	}
}

// firstEntry returns l's first entry and its length.
func (a *arena) firstEntry(l *plist) (uint64, int) { return binary.Uvarint(a.at(l.first)) }
