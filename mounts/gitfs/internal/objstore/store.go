package objstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/helper/mount"
	"github.com/go-git/go-billy/v5/helper/polyfill"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/sync/singleflight"
)

// Store reads the objects of one repository, and is safe for concurrent
// use. Its object directories are the repository's own and its alternates
// (alternates.go), searched in that order, as git searches them. In each,
// packed objects come from the pack reader (packs) and loose ones up to
// maxLooseFile from their files (looseObjects), neither taking a lock
// here. The rest (larger loose objects, a REF_DELTA whose base is in
// another pack) comes from go-git's object storage of the directory, which
// is not safe for concurrent use (its packfile scanners seek a shared
// descriptor) and is serialised by mu: only header reads and small objects
// are decoded under the lock; the content of a large blob streams from its
// own descriptor outside it.
type Store struct {
	repo *git.Repository
	// dirs are the object directories, the repository's own first. Their
	// go-git storages are guarded by mu.
	dirs objectDirs
	// skipped is what is wrong with the alternates (nil when nothing),
	// for the error of an object found nowhere.
	skipped error
	// flight collapses concurrent Bytes of one object into one decode:
	// the walk's workers and the walking program often miss the same tree
	// at once.
	flight singleflight.Group
	// onLoad, when set (by tests), is called at the start of each decode
	// of a flight.
	onLoad func(plumbing.Hash)
	// prom fetches what a partial clone lacks (promisor.go); nil for a
	// repository that holds all of its objects.
	prom *promisor

	mu sync.Mutex
}

// objectDir is one object directory: the repository's own, or an
// alternate.
type objectDir struct {
	fast fastObjects
	st   *filesystem.Storage
	// packsAt is the modification time of its pack directory when the
	// pack indexes were last read; guarded by Store.mu.
	packsAt time.Time
}

func (d *objectDir) packsTime() (time.Time, error) {
	fi, err := os.Stat(d.fast.packs.dir)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// Storage tuning. go-git's own object cache holds trees and commits (see
// noBlobCache), so it is kept small; objects past largeObject stream from
// their pack instead of being buffered whole.
const (
	goGitCacheSize     = 16 << 20
	largeObject        = 1 << 20
	maxOpenDescriptors = 32
)

// Open opens the object store of the repository at path (a worktree, its
// .git, a bare repository, or a linked worktree whose .git is a file), and
// of its alternates. Its error is go-git's, or says what is wrong with the
// repository; an alternate that cannot be used does not fail it (git too
// goes on without it), see [Store.Alternates].
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options: a partial clone's store fetches the
// objects it lacks from its promisor remote unless o.Offline
// (promisor.go).
func OpenWith(path string, o Options) (*Store, error) {
	probe, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, err
	}
	ps, ok := probe.Storer.(*filesystem.Storage)
	if !ok {
		return nil, errors.New("unexpected storage")
	}
	// The git directory is the root of go-git's file system (a linked
	// worktree's own, whose commondir file leads to the objects).
	objDir := objectsDir(ps.Filesystem().Root())
	if abs, err := filepath.Abs(objDir); err == nil {
		objDir = abs // for ObjectDirs, and the alternates relative to it
	}
	alts, problems := alternates(objDir)
	s := &Store{dirs: objectDirs{openObjectDir(objDir, ps.Filesystem())}, skipped: errors.Join(problems...)}
	for _, d := range alts {
		// go-git's storage wants a directory with objects/ in it: an
		// alternate's name need not be "objects".
		s.dirs = append(s.dirs, openObjectDir(d, polyfill.New(mount.New(memfs.New(), "objects", osfs.New(d)))))
	}
	repo, err := git.Open(packedStorage{Storage: s.dirs[0].st, dirs: &s.dirs, mu: &s.mu}, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.repo = repo
	if remote := partialClone(probe); remote != "" {
		s.prom = newPromisor(ps.Filesystem().Root(), remote, o, s.reloadOwn)
	}
	return s, nil
}

// openObjectDir opens the object directory objDir, whose go-git file
// system is gitFS (with objDir at its objects/). A pack the reader cannot
// map is served by go-git instead.
func openObjectDir(objDir string, gitFS billy.Filesystem) *objectDir {
	st := filesystem.NewStorageWithOptions(gitFS, noBlobCache{cache.NewObjectLRU(goGitCacheSize)}, filesystem.Options{
		MaxOpenDescriptors:   maxOpenDescriptors,
		LargeObjectThreshold: largeObject,
	})
	packs, _ := newPacks(objDir)
	d := &objectDir{fast: fastObjects{packs: packs, loose: looseObjects{dir: objDir}}, st: st}
	d.packsAt, _ = d.packsTime()
	return d
}

// AddRepository adds the object directories of the repository at path
// (its own and its alternates') to those the store reads, after its own:
// a submodule's, whose commit and objects a superproject's mount serves.
// Objects are named by their content, so whichever directory holds one,
// it is the same object. It returns the directories added. It must be
// called before the store serves concurrent readers.
func (s *Store) AddRepository(path string) ([]string, error) {
	probe, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, err
	}
	ps, ok := probe.Storer.(*filesystem.Storage)
	if !ok {
		return nil, errors.New("unexpected storage")
	}
	objDir := objectsDir(ps.Filesystem().Root())
	if abs, err := filepath.Abs(objDir); err == nil {
		objDir = abs
	}
	have := map[string]bool{}
	for _, d := range s.dirs {
		have[realPath(d.fast.loose.dir)] = true
	}
	alts, _ := alternates(objDir)
	var added []string
	for i, d := range append([]string{objDir}, alts...) {
		if have[realPath(d)] {
			continue
		}
		have[realPath(d)] = true
		gitFS := ps.Filesystem()
		if i > 0 {
			gitFS = polyfill.New(mount.New(memfs.New(), "objects", osfs.New(d)))
		}
		s.dirs = append(s.dirs, openObjectDir(d, gitFS))
		added = append(added, d)
	}
	return added, nil
}

// Alternates reports the alternates that cannot be used (each an
// *[AlternateError], joined), nil when there are none: what a mount warns
// of when it opens, naming the directories.
func (s *Store) Alternates() error { return s.skipped }

// ObjectDirs returns the host paths of the object directories the store
// reads: the repository's own, then its alternates', as git finds them.
// A program that reads the repository in a namespace of its own needs all
// of them there.
func (s *Store) ObjectDirs() []string {
	dirs := make([]string, len(s.dirs))
	for i, d := range s.dirs {
		dirs[i] = d.fast.loose.dir
	}
	return dirs
}

// Repository is go-git's view of the repository, over this store: for
// resolving a revision, reading the commit, fetching into a clone. Its
// object reads take mu where they reach go-git's storage, so it may read
// objects while the store serves other readers (gitfs's search walks the
// history for an ancestor's index); the rest of go-git's storage (the
// references, the configuration, a fetch's writes) is unguarded, for use
// before the store serves concurrent readers (as gitfs.Open uses it).
func (s *Store) Repository() *git.Repository { return s.repo }

// HashesWithPrefix returns the ids of the objects whose id starts with the
// bytes of prefix, for telling whether a short SHA is ambiguous.
func (s *Store) HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirs.hashesWithPrefix(prefix)
}

// retry runs fn, and once more after re-reading the pack directory (go-git's
// indexes and the pack reader's mappings) when fn could not find the object
// and the packs changed since they were read: a repository repacked under a
// live mount (git gc in the source worktree) moves objects to new packs,
// while a genuinely missing object must not cost an index reload on every
// read. Every object directory is checked: an alternate is as live as
// the repository.
// Callers hold s.mu.
func (s *Store) retry(fn func() error) error {
	err := fn()
	if err == nil || !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	changed := false
	for _, d := range s.dirs {
		at, serr := d.packsTime()
		if serr != nil || at.Equal(d.packsAt) {
			continue
		}
		d.packsAt, changed = at, true
		d.st.Reindex()
		// A pack that cannot be mapped is left to go-git, which
		// reports what is wrong with it if anything reads from it.
		_ = d.fast.packs.reload()
	}
	if !changed {
		return err
	}
	return fn()
}

// Size returns the size of object h from its header, without decoding it.
func (s *Store) Size(h plumbing.Hash) (int64, error) {
	var n int64
	err := s.orFetch(h, func() error {
		var err error
		n, err = s.size(h)
		return err
	})
	return n, err
}

func (s *Store) size(h plumbing.Hash) (int64, error) {
	if n, ok, err := s.dirs.size(h); ok {
		return n, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	err := s.retry(func() error {
		var err error
		n, err = s.dirs.slowSize(h)
		return err
	})
	return n, s.missing(h, err)
}

// missing adds to the error of an object found in no directory what is
// wrong with the alternates, if anything: the likely reason, named.
func (s *Store) missing(h plumbing.Hash, err error) error {
	if s.skipped == nil || !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	return fmt.Errorf("object %s: %w; an alternate that may hold it is skipped: %w", h, err, s.skipped)
}

// Reader returns the content of object h of type t (any type for
// plumbing.AnyObject) and its size. A whole object in a pack streams from
// the pack's mapping; for a large object go-git returns a lazy handle, and
// the decoding happens when the returned reader is read, outside the lock.
// An object of another type is plumbing.ErrObjectNotFound, as go-git says.
// Readers are not shared: two readers of one object each decode it (gitfs's
// blob cache collapses its loads of one blob into one).
func (s *Store) Reader(t plumbing.ObjectType, h plumbing.Hash) (io.ReadCloser, int64, error) {
	r, n, typ, err := s.open(t, h)
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

// open returns the content of object h, its size and its type; t is for
// go-git, which may check it.
func (s *Store) open(t plumbing.ObjectType, h plumbing.Hash) (r io.ReadCloser, n int64, typ plumbing.ObjectType, err error) {
	err = s.orFetch(h, func() error {
		var err error
		r, n, typ, err = s.open1(t, h)
		return err
	})
	return r, n, typ, err
}

func (s *Store) open1(t plumbing.ObjectType, h plumbing.Hash) (io.ReadCloser, int64, plumbing.ObjectType, error) {
	if r, n, typ, ok, err := s.dirs.open(h); ok {
		return r, n, typ, err
	}
	s.mu.Lock()
	var obj plumbing.EncodedObject
	err := s.retry(func() error {
		var err error
		obj, err = s.dirs.slowObject(t, h)
		return err
	})
	s.mu.Unlock()
	if err != nil {
		return nil, 0, 0, s.missing(h, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, 0, 0, err
	}
	return r, obj.Size(), obj.Type(), nil
}

// Bytes returns the whole content of a small object (a tree, a symlink
// target) of type t, checking its length against the header. Concurrent
// calls for one object share one decode. The slice may be shared with
// other callers and the pack reader's base cache: callers must not modify
// it.
func (s *Store) Bytes(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	v, err, _ := s.flight.Do(flightKey(h), func() (any, error) { return s.load(h) })
	if err != nil {
		return nil, err
	}
	obj := v.(*object)
	if t != plumbing.AnyObject && obj.typ != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return obj.data, nil
}

// flightKey is h as a singleflight key. It takes h by value: slicing the
// caller's h would move it to the heap.
func flightKey(h plumbing.Hash) string { return string(h[:]) }

// object is a decoded object, as Bytes's flights share it.
type object struct {
	data []byte
	typ  plumbing.ObjectType
}

// load decodes the whole of object h, of whatever type.
func (s *Store) load(h plumbing.Hash) (*object, error) {
	if s.onLoad != nil {
		s.onLoad(h)
	}
	var obj *object
	err := s.orFetch(h, func() error {
		var err error
		obj, err = s.load1(h)
		return err
	})
	return obj, err
}

func (s *Store) load1(h plumbing.Hash) (*object, error) {
	if b, typ, ok, err := s.dirs.bytes(h); ok {
		if err != nil {
			return nil, err
		}
		return &object{data: b, typ: typ}, nil
	}
	r, n, typ, err := s.open1(plumbing.AnyObject, h)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if extra, _ := r.Read(make([]byte, 1)); extra > 0 {
		return nil, ErrSizeMismatch
	}
	return &object{data: buf, typ: typ}, nil
}

// Close releases the packs and go-git's storages. Readers still open keep
// their pack mapped until they close.
func (s *Store) Close() error {
	if s.prom != nil {
		s.prom.close() // before the packs: a fetch's end reloads them
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, d := range s.dirs {
		d.fast.packs.close()
		errs = append(errs, d.st.Close())
	}
	return errors.Join(errs...)
}

// ErrSizeMismatch: an object's content is longer or shorter than its
// header says, which only a corrupt object does.
var ErrSizeMismatch = errors.New("object content does not match its header size")

// packedStorage is go-git's storage of the repository (its references,
// its configuration) with objects read from every object directory, the
// alternates' too, and packed ones by the pack reader, for what go-git
// itself reads at mount (resolving the revision, the commit): go-git loads
// every pack index of the repository before its first object, work
// proportional to the number of objects that the pack reader does not
// need. Anything the pack reader does not find is go-git's.
type packedStorage struct {
	*filesystem.Storage
	dirs *objectDirs // Store.dirs, which AddRepository extends
	mu   *sync.Mutex // Store.mu, for go-git's object storages
}

func (s packedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	b, typ, ok, err := s.dirs.bytes(h)
	switch {
	case !ok:
		s.mu.Lock()
		defer s.mu.Unlock()
		return (*s.dirs).slowObject(t, h)
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
	if _, ok, err := s.dirs.size(h); ok {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range *s.dirs {
		if err := d.st.HasEncodedObject(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
			return err
		}
	}
	return plumbing.ErrObjectNotFound
}

func (s packedStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if n, ok, err := s.dirs.size(h); ok {
		return n, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return (*s.dirs).slowSize(h)
}

// HashesWithPrefix is what go-git expands a short object id with.
func (s packedStorage) HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (*s.dirs).hashesWithPrefix(prefix)
}

// objectDirs are the object directories of a store, searched in order.
type objectDirs []*objectDir

// size, bytes and open are fastObjects's over every directory: ok is false
// when none of them takes the object.
func (ds objectDirs) size(h plumbing.Hash) (int64, bool, error) {
	for _, d := range ds {
		if n, ok, err := d.fast.size(h); ok {
			return n, ok, err
		}
	}
	return 0, false, nil
}

func (ds objectDirs) bytes(h plumbing.Hash) ([]byte, plumbing.ObjectType, bool, error) {
	for _, d := range ds {
		if b, typ, ok, err := d.fast.bytes(h); ok {
			return b, typ, ok, err
		}
	}
	return nil, 0, false, nil
}

func (ds objectDirs) open(h plumbing.Hash) (io.ReadCloser, int64, plumbing.ObjectType, bool, error) {
	for _, d := range ds {
		if r, n, typ, ok, err := d.fast.open(h); ok {
			return r, n, typ, ok, err
		}
	}
	return nil, 0, 0, false, nil
}

// slowObject asks go-git's storage of each directory in turn; the caller
// holds Store.mu. go-git's own
// reading of alternates, on a miss of the repository's storage, finds
// nothing the later directories do not (see alternates.go); objects are
// content-addressed, so whichever directory answers, the answer is right.
func (ds objectDirs) slowObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	for _, d := range ds {
		obj, err := d.st.EncodedObject(t, h)
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return obj, err
		}
	}
	return nil, plumbing.ErrObjectNotFound
}

// slowSize is slowObject's size. For a large object go-git's EncodedObject
// reads only headers.
func (ds objectDirs) slowSize(h plumbing.Hash) (int64, error) {
	for _, d := range ds {
		n, err := d.st.EncodedObjectSize(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			// EncodedObjectSize does not read a loose object
			// whose file go-git cannot parse the header of
			// cheaply; EncodedObject does.
			var obj plumbing.EncodedObject
			if obj, err = d.st.EncodedObject(plumbing.AnyObject, h); err == nil {
				n = obj.Size()
			}
		}
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return n, err
		}
	}
	return 0, plumbing.ErrObjectNotFound
}

// hashesWithPrefix collects the ids starting with prefix from every
// directory, once each.
func (ds objectDirs) hashesWithPrefix(prefix []byte) ([]plumbing.Hash, error) {
	var all []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for _, d := range ds {
		hs, err := d.st.HashesWithPrefix(prefix)
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				all = append(all, h)
			}
		}
	}
	return all, nil
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

// unwrapPath drops the host path from an *fs.PathError-like error.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
