package gitfs

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objects reads git objects. Packed objects come from the pack reader
// (packs), which is safe for concurrent use and takes no lock here. The
// rest (loose objects, alternates, a REF_DELTA whose base is in another
// pack) comes from go-git's object storage, which is not safe for
// concurrent use (its packfile scanners seek a shared descriptor) and is
// serialised by mu: only header reads and small objects are decoded under
// the lock; the content of a large blob streams from its own descriptor
// outside it.
type objects struct {
	fast fastObjects

	mu sync.Mutex
	st *filesystem.Storage
	// packsAt is the modification time of objects/pack when the pack
	// indexes were last read.
	packsAt time.Time
}

func newObjects(st *filesystem.Storage, fast fastObjects) *objects {
	o := &objects{st: st, fast: fast}
	o.packsAt, _ = o.packsTime()
	return o
}

func (o *objects) packsTime() (time.Time, error) {
	fi, err := os.Stat(o.fast.packs.dir)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// retry runs fn, and once more after re-reading the pack directory (go-git's
// indexes and the pack reader's mappings) when fn could not find the object
// and the packs changed since they were read: a repository repacked under a
// live mount
// (git gc in the source worktree) moves objects to new packs, while a
// genuinely missing object must not cost an index reload on every read.
// Callers hold o.mu.
func (o *objects) retry(fn func() error) error {
	err := fn()
	if err == nil || !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	at, serr := o.packsTime()
	if serr != nil || at.Equal(o.packsAt) {
		return err
	}
	o.packsAt = at
	o.st.Reindex()
	// A pack that cannot be mapped is left to go-git, which reports
	// what is wrong with it if anything reads from it.
	_ = o.fast.packs.reload()
	return fn()
}

// size returns the size of object h from its header, without decoding it.
func (o *objects) size(h plumbing.Hash) (int64, error) {
	if n, ok, err := o.fast.size(h); ok {
		return n, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	err := o.retry(func() error {
		var err error
		n, err = o.st.EncodedObjectSize(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			// EncodedObjectSize does not look in alternates; EncodedObject
			// does, and for a large object it still reads only headers.
			var obj plumbing.EncodedObject
			if obj, err = o.st.EncodedObject(plumbing.AnyObject, h); err == nil {
				n = obj.Size()
			}
		}
		return err
	})
	return n, err
}

// read returns the content of object h of type t and its size. For a large
// object go-git returns a lazy handle, and the decoding happens when the
// returned reader is read, outside the lock.
func (o *objects) read(t plumbing.ObjectType, h plumbing.Hash) (io.ReadCloser, int64, error) {
	if r, n, typ, ok, err := o.fast.open(h); ok {
		if err != nil {
			return nil, 0, err
		}
		if t != plumbing.AnyObject && typ != t {
			// As go-git answers an object of another type.
			r.Close()
			return nil, 0, plumbing.ErrObjectNotFound
		}
		return r, n, nil
	}
	o.mu.Lock()
	var obj plumbing.EncodedObject
	err := o.retry(func() error {
		var err error
		obj, err = o.st.EncodedObject(t, h)
		return err
	})
	o.mu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, 0, err
	}
	return r, obj.Size(), nil
}

// readAll returns the whole content of a small object (a tree, a symlink
// target), checking its length against the header. The slice may be shared
// with the pack reader's base cache: callers must not modify it.
func (o *objects) readAll(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	if b, typ, ok, err := o.fast.bytes(h); ok {
		switch {
		case err != nil:
			return nil, err
		case t != plumbing.AnyObject && typ != t:
			return nil, plumbing.ErrObjectNotFound
		}
		return b, nil
	}
	r, n, err := o.read(t, h)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if extra, _ := r.Read(make([]byte, 1)); extra > 0 {
		return nil, errSizeMismatch
	}
	return buf, nil
}

func (o *objects) close() error {
	o.fast.packs.close()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.st.Close()
}

var errSizeMismatch = errors.New("object content does not match its header size")

// packedStorage is go-git's storage with packed objects read by the pack
// reader, for what go-git itself reads at mount (resolving the revision,
// the commit): go-git loads every pack index of the repository before its
// first object, work proportional to the number of objects that the pack
// reader does not need. Anything the pack reader does not find is go-git's.
type packedStorage struct {
	*filesystem.Storage
	fast fastObjects
}

func (s packedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	b, typ, ok, err := s.fast.bytes(h)
	switch {
	case !ok:
		return s.Storage.EncodedObject(t, h)
	case err != nil:
		return nil, err
	case t != plumbing.AnyObject && typ != t:
		return nil, plumbing.ErrObjectNotFound
	}
	o := &plumbing.MemoryObject{}
	o.SetType(typ)
	if _, err := o.Write(b); err != nil {
		return nil, err
	}
	return o, nil
}

func (s packedStorage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok, err := s.fast.size(h); ok {
		return err
	}
	return s.Storage.HasEncodedObject(h)
}

func (s packedStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if n, ok, err := s.fast.size(h); ok {
		return n, err
	}
	return s.Storage.EncodedObjectSize(h)
}

// noBlobCache is go-git's object cache without blobs. go-git keys its cache
// by object id, which for a freshly decoded object means hashing it with
// collision-detecting SHA-1: for a full read of a commit that was an eighth
// of the CPU, to cache blobs our own cache already holds decoded. A blob
// cached as a delta base would rarely be reused either: the files of one
// commit are different files, so they share no delta chains. Trees and
// commits are small and still cached.
type noBlobCache struct{ cache.Object }

func (c noBlobCache) Put(o plumbing.EncodedObject) {
	if o.Type() != plumbing.BlobObject {
		c.Object.Put(o)
	}
}
