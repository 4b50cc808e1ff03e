package gitfs

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

// blobStore is the decoded content of blobs in files, addressed by blob
// id, in a directory shared by every daemon that uses the cache directory
// (CacheDir/blobs), as EdenFS keeps its local store: a daemon that reads a
// blob another one decoded before reads it from there, through the
// kernel's page cache, which can reclaim it, and decodes nothing.
//
// An entry is CacheDir/blobs/ab/cdef… (the id in hex, split after two
// digits), a header of storeHeader bytes (magic, CRC-32C of the content,
// its size, the blob id) and the content. It is written to a temporary
// file in its directory and renamed into place, so two daemons writing one
// entry at once leave one whole copy, and a reader never sees a partial
// one under the entry's name. What is read is checked whole against its
// header (magic, id, size against the file's, CRC): an entry cut short or
// corrupt (a crash before the data reached the disk, a bad sector, a
// hand edit) is removed and counts as a miss, so the blob is decoded again
// and never served wrong.
//
// Small content is written behind the reads that decoded it, by one
// goroutine, from the decoded bytes (which nobody changes); when more than
// storeQueueMax bytes wait, later content is not stored. The store is not
// bounded: it grows with the distinct blobs read through the cache
// directory, as a clone's objects do.
type blobStore struct {
	dir string
	// onError is told, once, why content could not be stored.
	onError   func(error)
	errOnce   sync.Once
	hits      atomic.Int64 // content read from the store
	writes    atomic.Int64 // entries written
	corrupt   atomic.Int64 // entries found corrupt and removed
	queued    atomic.Int64 // bytes waiting to be written
	mu        sync.Mutex
	queue     []storeWrite
	wake      chan struct{}
	done      chan struct{}
	closed    bool
	closeOnce sync.Once
}

type storeWrite struct {
	h    plumbing.Hash
	data []byte
}

const (
	storeMagic = "vfb1"
	// storeHeader: magic (4), CRC-32C of the content (4), size (8, little
	// endian), blob id (20).
	storeHeader = 4 + 4 + 8 + 20
	// storeQueueMax bounds the content waiting to be written.
	storeQueueMax = 16 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errStoreCorrupt = errors.New("blob store: corrupt entry")

func newBlobStore(dir string, onError func(error)) *blobStore {
	s := &blobStore{dir: dir, onError: onError, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.writer()
	return s
}

func (s *blobStore) path(h plumbing.Hash) string {
	x := h.String()
	return filepath.Join(s.dir, x[:2], x[2:])
}

func (s *blobStore) fail(err error) {
	s.errOnce.Do(func() {
		if s.onError != nil {
			s.onError(err)
		}
	})
}

func storeHeaderOf(h plumbing.Hash, crc uint32, size int64) []byte {
	hd := make([]byte, storeHeader)
	copy(hd, storeMagic)
	binary.LittleEndian.PutUint32(hd[4:], crc)
	binary.LittleEndian.PutUint64(hd[8:], uint64(size))
	copy(hd[16:], h[:])
	return hd
}

// parseHeader checks hd against h and the file's length, and returns the
// content's CRC and size.
func parseHeader(hd []byte, h plumbing.Hash, fileLen int64) (uint32, int64, error) {
	if len(hd) < storeHeader || string(hd[:4]) != storeMagic || !bytesEqual(hd[16:36], h[:]) {
		return 0, 0, errStoreCorrupt
	}
	size := int64(binary.LittleEndian.Uint64(hd[8:]))
	if size < 0 || size != fileLen-storeHeader {
		return 0, 0, errStoreCorrupt
	}
	return binary.LittleEndian.Uint32(hd[4:]), size, nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// get fills b from the store when it holds a sound entry for b.hash:
// content under memMax in memory, larger content as the entry's open file
// (b.off past its header). It reports whether it did. A corrupt entry is
// removed.
func (s *blobStore) get(b *blob, memMax int64) bool {
	f, err := os.Open(s.path(b.hash))
	if err != nil {
		return false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil || fi.Size() < storeHeader {
		s.bad(b.hash)
		return false
	}
	if fi.Size()-storeHeader < memMax {
		// One read: the header and the content.
		buf := make([]byte, fi.Size())
		if _, err := io.ReadFull(f, buf); err != nil {
			s.bad(b.hash)
			return false
		}
		crc, size, err := parseHeader(buf, b.hash, fi.Size())
		if err != nil || crc32.Checksum(buf[storeHeader:], castagnoli) != crc {
			s.bad(b.hash)
			return false
		}
		b.size, b.mem = size, buf[storeHeader:]
		s.hits.Add(1)
		return true
	}
	hd := make([]byte, storeHeader)
	if _, err := io.ReadFull(f, hd); err != nil {
		s.bad(b.hash)
		return false
	}
	crc, size, err := parseHeader(hd, b.hash, fi.Size())
	if err != nil {
		s.bad(b.hash)
		return false
	}
	sum := crc32.New(castagnoli)
	if n, err := io.Copy(sum, f); err != nil || n != size || sum.Sum32() != crc {
		s.bad(b.hash)
		return false
	}
	b.size, b.file, b.off = size, f, storeHeader
	keep = true
	s.hits.Add(1)
	return true
}

// bad removes the corrupt entry of h. Another daemon may have put a sound
// one in its place since it was read: removing that costs a decode, never
// a wrong read.
func (s *blobStore) bad(h plumbing.Hash) {
	s.corrupt.Add(1)
	_ = os.Remove(s.path(h))
}

// put queues data, the content of h, to be written behind.
func (s *blobStore) put(h plumbing.Hash, data []byte) {
	n := int64(len(data))
	s.mu.Lock()
	if s.closed || s.queued.Load()+n > storeQueueMax {
		s.mu.Unlock()
		return
	}
	s.queued.Add(n)
	s.queue = append(s.queue, storeWrite{h, data})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *blobStore) writer() {
	defer close(s.done)
	for {
		s.mu.Lock()
		q, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, w := range q {
			if err := s.write(w.h, w.data); err != nil {
				s.fail(err)
			}
			s.queued.Add(-int64(len(w.data)))
		}
		if closed && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-s.wake
		}
	}
}

// write stores data as the entry of h, unless it is there already.
func (s *blobStore) write(h plumbing.Hash, data []byte) error {
	dst := s.path(h)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	f, err := s.create(h)
	if err != nil {
		return err
	}
	hd := storeHeaderOf(h, crc32.Checksum(data, castagnoli), int64(len(data)))
	_, err = f.Write(append(hd, data...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	s.writes.Add(1)
	return nil
}

// create makes a temporary file beside the entry of h.
func (s *blobStore) create(h plumbing.Hash) (*os.File, error) {
	dir := filepath.Dir(s.path(h))
	f, err := createTemp(dir, ".tmp-")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = createTemp(dir, ".tmp-")
		}
	}
	return f, err
}

// createTemp is os.CreateTemp; tests make it fail writes.
var createTemp = os.CreateTemp

// storeWriter writes large content straight into an entry of the store
// as it is decoded: a temporary file, its header written last and the
// file renamed into place once whole (commit). The file stays open as the
// blob's content.
type storeWriter struct {
	s    *blobStore
	h    plumbing.Hash
	f    *os.File
	crc  uint32
	size int64
}

func (s *blobStore) writerFor(h plumbing.Hash) (*storeWriter, error) {
	f, err := s.create(h)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(storeHeader, io.SeekStart); err != nil { // the header goes in at commit
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &storeWriter{s: s, h: h, f: f}, nil
}

func (w *storeWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.crc = crc32.Update(w.crc, castagnoli, p[:n])
	w.size += int64(n)
	if err != nil {
		err = &storeWriteError{err}
	}
	return n, err
}

// storeWriteError is a failure to write an entry (a full disk), as opposed
// to one to decode what goes in it.
type storeWriteError struct{ err error }

func (e *storeWriteError) Error() string { return "blob store: " + e.err.Error() }
func (e *storeWriteError) Unwrap() error { return e.err }

// commit writes the header and renames the entry into place; the file
// stays open for reading.
func (w *storeWriter) commit() error {
	if _, err := w.f.WriteAt(storeHeaderOf(w.h, w.crc, w.size), 0); err != nil {
		return err
	}
	if err := os.Rename(w.f.Name(), w.s.path(w.h)); err != nil {
		return err
	}
	w.s.writes.Add(1)
	return nil
}

// abort drops an entry not committed.
func (w *storeWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// close writes what is queued and stops the writer.
func (s *blobStore) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
		<-s.done
	})
}
