package gitfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// treePack is the decoded content of every file of one tree, and of every
// tree below it, in one file, CacheDir/blobs/trees/<key>.v1.pack, mapped
// into the daemon once: the index build writes it (it reads every file
// and lists every tree anyway), and every later mount of a commit with
// that tree reads a blob's size and content, and a tree, from the mapping,
// with no system call and no inflate per object. The per-blob store
// (blobstore.go) costs an open, a stat, a read and a close per blob, most
// of a first unselective grep of a new daemon; a size a pack object's
// header gives only by inflating the start of its delta; and a tree, the
// delta chain it is stored as.
//
// The file: a magic, the blobs' content back to back, a table of one
// packEntry per distinct blob sorted by id (id, offset, size, CRC-32C of
// the content), the tree's key, and a trailer (the key's length, the
// table's offset, the entry count, a CRC-32C of table and key, a magic).
// It is written to a temporary file and renamed into place, and is never
// changed in place. Opening it checks the trailer, the key and the
// table's CRC; a blob's content is checked against its CRC the first time
// this daemon uses it, and one that fails is not served from the pack
// (it is decoded, as if the pack did not hold it). A file cut short after
// it was mapped (by hand: no daemon truncates one) faults the daemon, as
// it would git with its own packs.
//
// Content is found by id, so a pack serves any tree that shares its
// blobs: a mount whose searches narrow with an ancestor's index
// (search_ancestor.go) also maps that ancestor's pack, and reads from it
// the files its commit did not change.
//
// A cache directory keeps the treePackKeep packs used last (a mount's
// open counts as a use): each is a whole copy of its tree, and every
// commit an agent makes has a tree of its own.
//
// The pages the daemon touches leave its resident set every trimEvery
// bytes (MADV_DONTNEED): they stay in the page cache, which can reclaim
// them, and a later read maps them again.
type treePack struct {
	data  []byte // the whole mapping
	table []byte // n entries of packEntrySize bytes, sorted by id
	n     int
	// ok and bad are bitmaps over the table: content checked and found
	// sound, or found corrupt.
	ok, bad []atomic.Uint32
	// refs: one for the mount's blob cache, one per cache entry that
	// serves content from the mapping; the last release unmaps.
	refs atomic.Int64
	// read counts the bytes served since the mapping's pages last left
	// the resident set.
	read atomic.Int64
}

const (
	treePackMagic   = "vft1"
	packEntrySize   = 20 + 8 + 8 + 4
	treePackTrailer = 4 + 8 + 8 + 4 + 4
	// treePackTrimEvery is how many bytes are served from a pack's
	// mapping between two trims of its resident pages.
	treePackTrimEvery = 32 << 20
	// treePackKeep is how many tree packs a cache directory keeps, the
	// ones used last: each is a copy of its tree (what the per-blob
	// store keeps once for every commit), and an agent's commits each
	// make a tree of their own.
	treePackKeep = 4
)

var errTreePackCorrupt = errors.New("tree pack: corrupt")

// treePackPath is where the pack of the tree with key lives.
func treePackPath(cacheDir string, key []byte) string {
	return filepath.Join(cacheDir, "blobs", "trees", fmt.Sprintf("%x.v1.pack", key))
}

// openTreePack maps the pack at path and checks it belongs to key. A
// missing file is fs.ErrNotExist; a bad one errTreePackCorrupt.
func openTreePack(path string, key []byte) (*treePack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < int64(len(treePackMagic)+treePackTrailer) || size != int64(int(size)) {
		return nil, errTreePackCorrupt
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("tree pack: mmap: %w", err)
	}
	p, err := parseTreePack(data, key)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	return p, nil
}

func parseTreePack(data, key []byte) (*treePack, error) {
	end := len(data)
	tr := data[end-treePackTrailer:]
	if string(data[:4]) != treePackMagic || string(tr[24:28]) != treePackMagic {
		return nil, errTreePackCorrupt
	}
	keyLen := uint64(binary.LittleEndian.Uint32(tr[0:]))
	tableOff := binary.LittleEndian.Uint64(tr[4:])
	count := binary.LittleEndian.Uint64(tr[12:])
	crc := binary.LittleEndian.Uint32(tr[20:])
	if keyLen != uint64(len(key)) || 4+keyLen > uint64(end-treePackTrailer) {
		return nil, errTreePackCorrupt
	}
	tableEnd := uint64(end-treePackTrailer) - keyLen
	if tableOff < 4 || tableOff > tableEnd || (tableEnd-tableOff)/packEntrySize != count || (tableEnd-tableOff)%packEntrySize != 0 {
		return nil, errTreePackCorrupt
	}
	if crc32.Checksum(data[tableOff:end-treePackTrailer], castagnoli) != crc || !bytes.Equal(data[tableEnd:end-treePackTrailer], key) {
		return nil, errTreePackCorrupt
	}
	p := &treePack{data: data, table: data[tableOff:tableEnd], n: int(count)}
	for i := range p.n {
		off, size := p.extent(i)
		if off < 4 || off > tableOff || size > tableOff-off {
			return nil, errTreePackCorrupt
		}
		if i > 0 && bytes.Compare(p.id(i-1), p.id(i)) >= 0 {
			return nil, errTreePackCorrupt
		}
	}
	words := (p.n + 31) / 32
	p.ok, p.bad = make([]atomic.Uint32, words), make([]atomic.Uint32, words)
	p.refs.Store(1)
	return p, nil
}

func (p *treePack) entry(i int) []byte { return p.table[i*packEntrySize : (i+1)*packEntrySize] }
func (p *treePack) id(i int) []byte    { return p.entry(i)[:20] }

func (p *treePack) extent(i int) (off, size uint64) {
	e := p.entry(i)
	return binary.LittleEndian.Uint64(e[20:]), binary.LittleEndian.Uint64(e[28:])
}

// find returns h's entry.
func (p *treePack) find(h plumbing.Hash) (int, bool) {
	i := sort.Search(p.n, func(i int) bool { return bytes.Compare(p.id(i), h[:]) >= 0 })
	return i, i < p.n && bytes.Equal(p.id(i), h[:])
}

// size returns h's size when the pack holds h.
func (p *treePack) size(h plumbing.Hash) (int64, bool) {
	i, ok := p.find(h)
	if !ok {
		return 0, false
	}
	_, size := p.extent(i)
	return int64(size), true
}

// content returns h's content, checked, when the pack holds it sound. The
// slice is the mapping's: read-only, valid while the caller holds a
// reference (ref).
func (p *treePack) content(h plumbing.Hash) ([]byte, bool) {
	i, ok := p.find(h)
	if !ok {
		return nil, false
	}
	w, bit := i/32, uint32(1)<<(i%32)
	if p.bad[w].Load()&bit != 0 {
		return nil, false
	}
	off, size := p.extent(i)
	data := p.data[off : off+size : off+size]
	if p.ok[w].Load()&bit == 0 {
		if crc32.Checksum(data, castagnoli) != binary.LittleEndian.Uint32(p.entry(i)[36:]) {
			p.bad[w].Or(bit)
			return nil, false
		}
		p.ok[w].Or(bit)
	}
	if p.read.Add(int64(size)) >= treePackTrimEvery {
		p.read.Store(0)
		_ = unix.Madvise(p.data, unix.MADV_DONTNEED)
	}
	return data, true
}

// acquire takes a reference unless the last one is gone (the mapping is
// then unmapped, or about to be): a reader that loaded p from a pointer
// another goroutine may clear must hold one while it reads.
func (p *treePack) acquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *treePack) release() {
	if p.refs.Add(-1) == 0 {
		unix.Munmap(p.data)
	}
}

// treePackWriter writes a tree's pack as the index build reads its files,
// from several goroutines: add appends content, finish writes the table
// and renames the file into place.
type treePackWriter struct {
	path string
	key  []byte
	mu   sync.Mutex
	f    *os.File
	off  int64
	ents []packEntry
	err  error
}

type packEntry struct {
	h         plumbing.Hash
	off, size int64
	crc       uint32
}

func newTreePackWriter(path string, key []byte) (*treePackWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(treePackMagic); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &treePackWriter{path: path, key: key, f: f, off: int64(len(treePackMagic))}, nil
}

// add appends data, the content of h. The first error sticks: finish
// reports it.
func (w *treePackWriter) add(h plumbing.Hash, data []byte) {
	crc := crc32.Checksum(data, castagnoli)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(data); err != nil {
		w.err = err
		return
	}
	w.ents = append(w.ents, packEntry{h: h, off: w.off, size: int64(len(data)), crc: crc})
	w.off += int64(len(data))
}

// finish writes the table, the key and the trailer, and renames the pack
// into place.
func (w *treePackWriter) finish() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		w.abortLocked()
		return w.err
	}
	slices.SortFunc(w.ents, func(a, b packEntry) int { return bytes.Compare(a.h[:], b.h[:]) })
	w.ents = slices.CompactFunc(w.ents, func(a, b packEntry) bool { return a.h == b.h })
	tail := make([]byte, 0, len(w.ents)*packEntrySize+len(w.key)+treePackTrailer)
	for _, e := range w.ents {
		tail = append(tail, e.h[:]...)
		tail = binary.LittleEndian.AppendUint64(tail, uint64(e.off))
		tail = binary.LittleEndian.AppendUint64(tail, uint64(e.size))
		tail = binary.LittleEndian.AppendUint32(tail, e.crc)
	}
	tail = append(tail, w.key...)
	crc := crc32.Checksum(tail, castagnoli)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(w.key)))
	tail = binary.LittleEndian.AppendUint64(tail, uint64(w.off))
	tail = binary.LittleEndian.AppendUint64(tail, uint64(len(w.ents)))
	tail = binary.LittleEndian.AppendUint32(tail, crc)
	tail = append(tail, treePackMagic...)
	if _, err := w.f.Write(tail); err != nil {
		w.abortLocked()
		return err
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		return err
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		os.Remove(w.f.Name())
		return err
	}
	pruneTreePacks(filepath.Dir(w.path), treePackKeep)
	return nil
}

// usedTreePack marks the pack at path as used now (its modification
// time), for pruneTreePacks.
func usedTreePack(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// pruneTreePacks removes the packs of dir but the keep used last. A daemon
// that has one mapped reads on from it: the file goes with its last
// mapping.
func pruneTreePacks(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type pack struct {
		name string
		used time.Time
	}
	var packs []pack
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".v1.pack") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			packs = append(packs, pack{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(packs, func(a, b pack) int { return b.used.Compare(a.used) })
	for _, p := range packs[min(keep, len(packs)):] {
		_ = os.Remove(filepath.Join(dir, p.name))
	}
}

// abort removes what was written.
func (w *treePackWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked()
}

func (w *treePackWriter) abortLocked() {
	if w.f != nil {
		w.f.Close()
		os.Remove(w.f.Name())
		w.f = nil
	}
	if w.err == nil {
		w.err = errors.New("tree pack: aborted")
	}
}
