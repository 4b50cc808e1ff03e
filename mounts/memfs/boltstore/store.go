package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// FormatVersion is the version of the file format this package writes. It
// reads every version up to it.
const FormatVersion = 1

// Errors of Open and Load. None of them carries the file's path: the
// caller, who named the file, adds it.
var (
	// ErrLocked: another process holds the file.
	ErrLocked = errors.New("in use by another process (a store is held by one process at a time)")
	// ErrNoDir: the file's directory does not exist.
	ErrNoDir = errors.New("its directory does not exist")
	// ErrNotOurs: the file exists but is not a vfsmount memory store.
	ErrNotOurs = errors.New("not a vfsmount memory store")
	// ErrNewerFormat: the file was written by a newer vfsmount.
	ErrNewerFormat = errors.New("written in a newer format")
	// ErrCorrupt: the file is a store but cannot be read back.
	ErrCorrupt = errors.New("corrupt")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
)

var (
	bucketMeta    = []byte("vfsmount")
	bucketInodes  = []byte("inodes")
	bucketEntries = []byte("entries")
	bucketData    = []byte("data")
	keyMagic      = []byte("magic")
	keyFormat     = []byte("format")
	magic         = []byte("vfsmount memory store")
)

// Options configure a store. The zero value is the default.
type Options struct {
	// Logger receives write failures and garbage collection notes; nil
	// is silent.
	Logger *slog.Logger
	// FlushInterval bounds how long a change waits in memory before it is
	// written, when nothing syncs it sooner. 0 means one second.
	FlushInterval time.Duration
	// MaxPending is how many bytes of changes may wait before a write
	// starts at once; writers block while twice as much waits. 0 means
	// 8 MiB.
	MaxPending int
	// LockTimeout is how long Open waits for another process to let go of
	// the file. 0 means 500ms.
	LockTimeout time.Duration
}

// Store is a [memfs.Syncer] that keeps a memory mount in a bbolt file. Open
// it, call Load once to get the mount, and Close it after the mount is no
// longer served.
type Store struct {
	db         *bolt.DB
	log        *slog.Logger
	interval   time.Duration
	maxPending int

	mu   sync.Mutex
	cond *sync.Cond // broadcast on every change of the fields below
	// pending are the commits not yet handed to a write, in order.
	pending      []*memfs.Mutation
	pendingBytes int
	// inflight is the size of the batch being written.
	inflight int
	// seq counts commits accepted, flushed those known durable.
	seq, flushed uint64
	urgent       bool        // write pending now
	timer        *time.Timer // armed when the first pending commit arrives
	err          error       // the first write failure; sticky
	loaded       bool
	closing      bool
	done         chan struct{} // closed when the writer exits

	// sizes is each regular file's size as written, so a record that
	// shrinks one knows to cut its chunks. Only the writer touches it
	// once Load returned.
	sizes map[uint64]int64
}

var _ memfs.Syncer = (*Store)(nil)

// Open opens the store at path, creating it when it does not exist (or is
// empty). A file that is not a store, a corrupt one or a newer one is left
// as it is. Nothing is read yet: call Load.
func Open(path string, opts Options) (_ *Store, err error) {
	defer func() {
		// bbolt panics on some damaged pages rather than failing.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return nil, ErrNoDir
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 500 * time.Millisecond
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, bare(err)
	case !fi.Mode().IsRegular():
		return nil, ErrNotOurs
	case fi.Size() > 0:
		// Look before taking it for writing: bbolt may rewrite the
		// free list of a foreign file on a writable open.
		if err := inspect(path, opts.LockTimeout); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return nil, openErr(err)
	}
	s := &Store{
		db: db, log: opts.Logger, interval: opts.FlushInterval, maxPending: opts.MaxPending,
		sizes: map[uint64]int64{}, done: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.interval <= 0 {
		s.interval = time.Second
	}
	if s.maxPending <= 0 {
		s.maxPending = 8 << 20
	}
	fresh := false
	err = db.View(func(tx *bolt.Tx) error {
		fresh = tx.Bucket(bucketMeta) == nil
		return checkFormat(tx)
	})
	if err == nil && fresh {
		err = db.Update(initialise)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// inspect opens path read-only (which writes nothing, ever) and checks that
// it is a store this version can read.
func inspect(path string, timeout time.Duration) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return openErr(err)
	}
	defer db.Close()
	return db.View(checkFormat)
}

// openErr maps bbolt's open failures onto ours.
func openErr(err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return ErrLocked
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return ErrNotOurs
	case errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return bare(err)
}

// bare strips the path an *fs.PathError carries.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// checkFormat accepts a store of a version this package reads, and a bbolt
// file with no bucket at all (one created by a process that died before it
// wrote anything).
func checkFormat(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if empty {
			return nil
		}
		return ErrNotOurs
	}
	if !bytes.Equal(meta.Get(keyMagic), magic) {
		return ErrNotOurs
	}
	v := meta.Get(keyFormat)
	switch {
	case len(v) != 4 || binary.BigEndian.Uint32(v) == 0:
		return fmt.Errorf("%w: bad format version", ErrCorrupt)
	case binary.BigEndian.Uint32(v) > FormatVersion:
		return fmt.Errorf("%w (version %d; this vfsmount reads up to %d)", ErrNewerFormat, binary.BigEndian.Uint32(v), FormatVersion)
	}
	for _, b := range [][]byte{bucketInodes, bucketEntries, bucketData} {
		if tx.Bucket(b) == nil {
			return fmt.Errorf("%w: bucket %q missing", ErrCorrupt, b)
		}
	}
	return nil
}

func initialise(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keyMagic, magic); err != nil {
		return err
	}
	if err := meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketInodes, bucketEntries, bucketData} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// Load reads the saved tree and returns a memory mount holding it, with s as
// its store (opts.Store is overwritten). It may be called once. A file that
// does not hold a consistent tree is ErrCorrupt and is not written to;
// otherwise inodes no name reaches (files unlinked while open when the last
// process died) are deleted from it.
func (s *Store) Load(opts memfs.Options) (fsys *memfs.FS, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return nil, ErrClosed
	case s.loaded:
		return nil, errors.New("boltstore: Load called twice")
	}
	opts.Store = s
	var garbage [][2][]byte // bucket, key
	err = s.db.View(func(tx *bolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		img, reached, err := s.readTree(tx, &garbage)
		if err != nil {
			return err
		}
		img.Content = func(put func(memfs.WriteRecord) error) error {
			c := tx.Bucket(bucketData).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(k) != 16 || len(v) > chunkSize {
					return fmt.Errorf("bad chunk key %x", k)
				}
				ino, idx := binary.BigEndian.Uint64(k), int64(binary.BigEndian.Uint64(k[8:]))
				if !reached[ino] {
					garbage = append(garbage, [2][]byte{bucketData, bytes.Clone(k)})
					continue
				}
				if idx < 0 || idx > (1<<63-1)/chunkSize-1 {
					return fmt.Errorf("bad chunk index %d", idx)
				}
				if err := put(memfs.WriteRecord{Ino: ino, Off: idx * chunkSize, Data: v}); err != nil {
					return err
				}
			}
			return nil
		}
		if img.Checkpoints, err = readCheckpoints(tx); err != nil {
			return err
		}
		fsys, err = memfs.Restore(opts, img)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// memfs gives a root it was not told about fresh times and the
	// caller's owner; record it, so the next start shows the same root.
	var root []byte
	if a, err := fsys.Stat(context.Background(), "."); err == nil {
		err := s.db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketInodes).Get(inoKey(1)) == nil {
				root = encodeInode(&memfs.InodeRecord{Ino: 1, Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Nlink: a.Nlink,
					Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(garbage) > 0 || root != nil {
		err := s.db.Update(func(tx *bolt.Tx) error {
			if root != nil {
				if err := tx.Bucket(bucketInodes).Put(inoKey(1), root); err != nil {
					return err
				}
			}
			for _, g := range garbage {
				if bytes.Equal(g[0], bucketData) {
					// A checkpoint may still hold it.
					if err := unpin(tx, g[1], tx.Bucket(bucketData).Get(g[1])); err != nil {
						return err
					}
				}
				if err := tx.Bucket(g[0]).Delete(g[1]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(garbage) > 0 {
			s.log.Info("memory store: dropped what no name reaches", "records", len(garbage))
		}
	}
	s.loaded = true
	go s.run()
	return fsys, nil
}

// readTree decodes the inodes and entries, and finds which inodes a name
// reaches from the root; what it does not reach is added to garbage.
func (s *Store) readTree(tx *bolt.Tx, garbage *[][2][]byte) (memfs.Image, map[uint64]bool, error) {
	var img memfs.Image
	inodes := tx.Bucket(bucketInodes)
	if inodes == nil { // a fresh file: bbolt initialised it, checkFormat passed
		return img, map[uint64]bool{1: true}, nil
	}
	isDir := map[uint64]bool{1: true}
	err := inodes.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("bad inode key %x", k)
		}
		r, err := decodeInode(binary.BigEndian.Uint64(k), v)
		if err != nil {
			return err
		}
		img.Inodes = append(img.Inodes, r)
		isDir[r.Ino] = r.Mode.IsDir()
		return nil
	})
	if err != nil {
		return img, nil, err
	}
	children := map[uint64][]uint64{}
	err = tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
		if len(k) <= 8 || len(v) != 8 {
			return fmt.Errorf("bad entry key %x", k)
		}
		e := memfs.EntryRecord{Dir: binary.BigEndian.Uint64(k), Name: string(k[8:]), Ino: binary.BigEndian.Uint64(v)}
		img.Entries = append(img.Entries, e)
		children[e.Dir] = append(children[e.Dir], e.Ino)
		return nil
	})
	if err != nil {
		return img, nil, err
	}
	reached := map[uint64]bool{1: true}
	for queue := []uint64{1}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !reached[c] {
				reached[c] = true
				if isDir[c] {
					queue = append(queue, c)
				}
			}
		}
	}
	// Keep only what is reached: Restore would drop the rest anyway, and
	// a half-linked orphan must not make the file look corrupt.
	inos := img.Inodes[:0]
	for _, r := range img.Inodes {
		if reached[r.Ino] {
			inos = append(inos, r)
			if r.Mode.IsRegular() {
				s.sizes[r.Ino] = r.Size
			}
			continue
		}
		*garbage = append(*garbage, [2][]byte{bucketInodes, inoKey(r.Ino)})
	}
	img.Inodes = inos
	ents := img.Entries[:0]
	for _, e := range img.Entries {
		if reached[e.Dir] {
			ents = append(ents, e)
			continue
		}
		*garbage = append(*garbage, [2][]byte{bucketEntries, entryKey(e.Dir, e.Name)})
	}
	img.Entries = ents
	return img, reached, nil
}

// Commit queues m for the next write. It fails once a write has failed:
// the file is then behind the tree, and the mount must stop acknowledging
// changes it cannot keep.
func (s *Store) Commit(m *memfs.Mutation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Backpressure: a writer faster than the disk waits here rather
	// than piling up copies of its data.
	for s.err == nil && !s.closing && s.pendingBytes >= 2*s.maxPending {
		s.cond.Wait()
	}
	switch {
	case s.err != nil:
		return s.err
	case s.closing || !s.loaded:
		return ErrClosed
	}
	s.pending = append(s.pending, m)
	s.pendingBytes += weight(m)
	s.seq++
	switch {
	case s.pendingBytes >= s.maxPending:
		s.urgent = true
		s.cond.Broadcast()
	case s.timer == nil:
		s.timer = time.AfterFunc(s.interval, s.hurry)
	}
	return nil
}

// hurry makes the writer write what is pending now.
func (s *Store) hurry() {
	s.mu.Lock()
	s.urgent = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// weight estimates the memory a pending mutation holds.
func weight(m *memfs.Mutation) int {
	n := 64 + 96*len(m.Inodes) + 32*len(m.Entries) + 8*len(m.Freed)
	for _, w := range m.Writes {
		n += len(w.Data)
	}
	return n
}

// Sync returns once every commit made before it is durable. With nothing
// pending it returns at once, without touching the disk.
func (s *Store) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.seq
	if s.flushed < target {
		s.urgent = true
		s.cond.Broadcast()
	}
	for s.flushed < target && s.err == nil {
		s.cond.Wait()
	}
	return s.err
}

// Close writes what is pending and closes the file. Commits after Close fail
// with ErrClosed. It returns the first write failure, if any.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closing = true
	s.cond.Broadcast()
	loaded := s.loaded
	s.mu.Unlock()
	if loaded {
		<-s.done
	}
	s.mu.Lock()
	werr := s.err
	s.mu.Unlock()
	return errors.Join(werr, s.db.Close())
}

// run is the writer: it writes batches until the store closes.
func (s *Store) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for !s.closing && !(s.urgent && len(s.pending) > 0) {
			s.cond.Wait()
		}
		if len(s.pending) == 0 || s.err != nil {
			s.mu.Unlock()
			return // closing, with nothing to write or no way to
		}
		batch, target := s.pending, s.seq
		s.inflight, s.pending, s.pendingBytes, s.urgent = s.pendingBytes, nil, 0, false
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		s.cond.Broadcast() // room for blocked writers
		s.mu.Unlock()

		err := s.write(batch)

		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("writing the memory store: %w", err)
			s.log.Error("memory store: write failed; the mount refuses changes from now on", "err", err)
		}
		s.flushed, s.inflight = target, 0
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// write applies a batch in one transaction, which bbolt makes durable
// (fdatasync) before it returns.
func (s *Store) write(batch []*memfs.Mutation) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.db.Update(func(tx *bolt.Tx) error {
		a := &applier{
			tx:     tx,
			inodes: tx.Bucket(bucketInodes), entries: tx.Bucket(bucketEntries), data: tx.Bucket(bucketData),
			sizes: s.sizes, dirty: map[uint64]map[int64][]byte{},
		}
		for _, m := range batch {
			if err := a.apply(m); err != nil {
				return err
			}
		}
		return a.finish()
	})
}
