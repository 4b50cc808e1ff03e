package gitfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp/syntax"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/codeindex"
)

// IndexMode says when a mount builds the search index of its tree.
type IndexMode string

const (
	// IndexLazy builds it in the background on the first search (the
	// default): a mount nobody searches costs nothing.
	IndexLazy IndexMode = ""
	// IndexEager starts building it when the mount opens.
	IndexEager IndexMode = "eager"
	// IndexOff never indexes: every search scans.
	IndexOff IndexMode = "off"
)

var _ mounts.SearchFS = (*FS)(nil)

// searcher holds the trigram index of the served tree (see "Search" in
// the package doc). The index is found in, or built into, the cache
// directory, keyed by the tree's id, so every mount of a commit with the
// same tree — on this machine, in any daemon — shares it.
type searcher struct {
	f   *FS
	dir string // where indexes live; "" keeps the index in memory only
	// cacheDir is the cache directory ("": none), where the tree packs
	// are (packPathOf).
	cacheDir string
	key      []byte // the served tree's id
	mode     IndexMode

	mu       sync.Mutex
	ix       *codeindex.Index
	building bool
	failed   bool          // a build failed: searches scan for the life of the mount
	started  bool          // a build was started once
	built    chan struct{} // closed when the build under way ends
	stop     chan struct{} // closed by close
	// quietUntil (Unix nanoseconds) is when the scan of a search that
	// could not narrow may have started reading files: until then, or
	// while a scan reads the mount, the build waits.
	quietUntil atomic.Int64
	paused     atomic.Int64 // nanoseconds the build waited for scans
	fromCache  atomic.Int64 // files the build took from the blob cache
	wg         sync.WaitGroup
	closed     bool
	// anc is an ancestor's index, used until ix is there (see
	// search_ancestor.go); looked up once, on the first search without ix.
	anc       *ancestor
	ancLooked bool
}

func newSearcher(f *FS, cacheDir string, mode IndexMode) *searcher {
	s := &searcher{f: f, key: bytes.Clone(f.root.hash[:]), mode: mode, stop: make(chan struct{})}
	if k := f.submoduleKey(); k != nil {
		s.key = k // the tree with its submodules' is another index
	}
	if cacheDir != "" {
		s.dir = filepath.Join(cacheDir, "index")
		s.cacheDir = cacheDir
	}
	if mode == IndexEager {
		s.index()
	}
	return s
}

// file is the index's file name.
func (s *searcher) file() string { return indexFile(plumbing.Hash(s.key)) }

// indexFile is the name of the index of tree: its id and the format's
// version.
func indexFile(tree plumbing.Hash) string { return tree.String() + ".v2.idx" }

// Candidates names the files at or below dir that may hold a match of re
// (mounts.SearchFS), from the index of the tree. Until the index is
// there — the first search starts building it, in the background — and
// for a pattern that every file may match, it says it cannot narrow, and
// the search scans.
func (f *FS) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	n, err := f.resolve(ctx, "search", dir)
	if err != nil {
		return nil, false, err
	}
	if !n.kind.isDir() {
		return nil, false, mounts.PathErr("search", dir, mounts.ErrNotDir)
	}
	ix, anc := f.search.source()
	if ix == nil {
		return nil, false, nil
	}
	ids, all, err := ix.Candidates(codeindex.Query(re), codeindex.Literals(re))
	if err != nil {
		// A bad posting list past the checksum: not to be trusted.
		f.search.drop(ix, err)
		return nil, false, nil
	}
	if all {
		return nil, false, nil
	}
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		name, ok := ix.Name(id), true
		if anc != nil {
			name, ok = anc.name(id)
		}
		if ok && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	if anc != nil {
		// An ancestor's index: what changed since is read whatever the
		// pattern, in walk order with the rest.
		var changed []string
		for _, name := range anc.changed {
			if strings.HasPrefix(name, prefix) {
				changed = append(changed, name)
			}
		}
		names = mergeWalk(names, changed)
	}
	f.prefetchNames(ctx, names)
	return names, true, nil
}

// prefetchNames queues, in a partial clone, one fetch of the blobs of
// names that it lacks: the files a search is about to read, which would
// otherwise be fetched one by one as its readers meet them.
func (f *FS) prefetchNames(ctx context.Context, names []string) {
	if f.obj.Promisor() == "" || len(names) == 0 {
		return
	}
	searched := make(map[string]bool, len(names))
	for _, name := range names {
		searched[name] = true
	}
	f.candidates.Store(&searched)
	hs := make([]plumbing.Hash, 0, len(names))
	for _, name := range names {
		if n, err := f.resolve(ctx, "search", name); err == nil && !n.kind.isDir() && !f.packed(n.hash) {
			hs = append(hs, n.hash)
		}
	}
	f.obj.PrefetchAsync(hs)
}

// packed says whether the tree pack holds h: its content is read from
// there, with nothing to fetch.
func (f *FS) packed(h plumbing.Hash) bool {
	return f.blobs.inPacks(func(p *treePack) bool {
		_, ok := p.find(h)
		return ok
	})
}

// source returns the index searches narrow with: the tree's own, or
// until it is there an ancestor's, with what changed since; nil for none.
func (s *searcher) source() (*codeindex.Index, *ancestor) {
	if ix := s.index(); ix != nil || s.mode == IndexOff {
		return ix, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil
	}
	if s.ix != nil { // built meanwhile
		return s.ix, nil
	}
	if !s.ancLooked {
		s.ancLooked = true
		s.anc = s.findAncestor()
		if s.anc != nil {
			// The files this commit did not change are in the
			// ancestor's tree pack, if it has one.
			s.usePack(s.anc.tree[:], true)
		}
	}
	if s.anc == nil {
		return nil, nil
	}
	return s.anc.ix, s.anc
}

// index returns the index, or nil while there is none: it reads it from
// the cache directory on first use, and starts a build when that fails.
func (s *searcher) index() *codeindex.Index {
	if s.mode == IndexOff {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil || s.building || s.failed || s.closed {
		return s.ix
	}
	if s.dir != "" {
		ix, err := codeindex.Open(filepath.Join(s.dir, s.file()), s.key)
		if err == nil {
			s.ix = ix
			return ix
		}
		if !errors.Is(err, fs.ErrNotExist) {
			s.f.logOnce("index:"+s.file(), "gitfs: search index ignored and rebuilt", "tree", plumbing.Hash(s.key).String(), "err", unwrapPath(err))
		}
	}
	if s.mode != IndexEager || s.started {
		// A search starts it, and scans now: the build keeps out of
		// its way until the scan reads (and then while it reads).
		s.quietUntil.Store(time.Now().Add(s.f.walk.th.Window).UnixNano())
	}
	s.started = true
	s.building = true
	s.built = make(chan struct{})
	s.wg.Add(1)
	go s.build()
	return nil
}

// drop forgets ix, found bad, and builds the index again; an ancestor's
// is forgotten, and removed for its commit's next mount to rebuild. After
// close it does nothing: a search that fails then met the close, not a
// bad file.
func (s *searcher) drop(ix *codeindex.Index, err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if a := s.anc; a != nil && a.ix == ix {
		s.anc = nil
		s.mu.Unlock()
		s.f.logOnce("index:"+indexFile(a.tree), "gitfs: search index ignored", "tree", a.tree.String(), "err", err)
		os.Remove(filepath.Join(s.dir, indexFile(a.tree)))
		ix.Close()
		return
	}
	if s.ix == ix {
		s.ix = nil
		if s.dir != "" {
			os.Remove(filepath.Join(s.dir, s.file()))
		}
		ix.Close() // a search still reading it fails, and scans
	}
	s.mu.Unlock()
	s.f.logOnce("index:"+s.file(), "gitfs: search index ignored and rebuilt", "tree", plumbing.Hash(s.key).String(), "err", err)
	s.index()
}

// wait waits for the build under way, if any, to end.
func (s *searcher) wait() {
	s.mu.Lock()
	ch := s.built
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// WaitIndex starts the search index (as the first search does) and waits
// until a build under way has ended, saved to the cache directory or not:
// it reports whether searches narrow from now on. For tests and
// benchmarks, and for a caller that would rather wait than scan.
func (f *FS) WaitIndex(ctx context.Context) (bool, error) {
	f.search.index()
	done := make(chan struct{})
	go func() {
		f.search.wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return f.search.index() != nil, nil
}

func (s *searcher) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	if s.ix != nil {
		s.ix.Close()
	}
	if s.anc != nil {
		s.anc.ix.Close()
	}
	s.mu.Unlock()
}

// indexed is one file of the tree to index.
type indexed struct {
	name string
	hash plumbing.Hash
}

// build indexes the tree, publishes the index to the cache directory and
// serves it. A failure to publish (a full disk) leaves the index served
// from memory, logged once; a failure to read the tree leaves searches
// scanning.
func (s *searcher) build() {
	defer s.wg.Done()
	start := time.Now()
	s.paused.Store(0) // this build's figures, not a rebuild's sum
	s.fromCache.Store(0)
	ix, err := s.make()
	s.mu.Lock()
	if err == nil {
		s.ix = ix // served from here on, saved or not
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		if !errors.Is(err, errStopped) {
			s.f.logOnce("indexbuild:"+s.file(), "gitfs: cannot build the search index; searches scan", "err", unwrapPath(err))
		}
	default:
		// Built once searched (took); the bytes of its file, which
		// searches then read their posting lists from, come after
		// (encoded).
		paused := time.Duration(s.paused.Load())
		took := time.Since(start) - paused
		t0 := time.Now()
		data, ferr := ix.File()
		if ferr != nil {
			s.f.logOnce("indexsave:"+s.file(), "gitfs: cannot save the search index; it is kept in memory", "err", ferr)
			break
		}
		s.f.log.Info("gitfs: search index built", "tree", plumbing.Hash(s.key).String(), "files", ix.Len(),
			"scanned", ix.Scanned(), "cached", s.fromCache.Load(), "bytes", len(data), "took", took.Round(time.Microsecond),
			"encoded", time.Since(t0).Round(time.Microsecond), "paused", paused.Round(time.Millisecond))
		if s.dir == "" {
			break
		}
		if err := codeindex.Publish(s.dir, s.file(), data); err != nil {
			s.f.logOnce("indexsave:"+s.file(), "gitfs: cannot save the search index; it is kept in memory", "err", unwrapPath(err))
			break
		}
		// Saved: served from the file from here on, its posting lists
		// read when a search needs them, rather than all of it held.
		if fix, err := codeindex.Open(filepath.Join(s.dir, s.file()), s.key); err == nil {
			s.mu.Lock()
			if s.ix == ix && !s.closed {
				s.ix = fix
				fix = nil
			}
			s.mu.Unlock()
			if fix != nil {
				fix.Close()
			}
		}
	}
	s.mu.Lock()
	s.failed = err != nil
	s.building = false
	close(s.built)
	s.mu.Unlock()
}

var errStopped = errors.New("mount closed")

// make reads every file of the tree and indexes it.
func (s *searcher) make() (*codeindex.Index, error) {
	if err := s.pause(); err != nil {
		return nil, err
	}
	pack := s.packWriter()
	abort := func() {
		if pack != nil {
			pack.abort()
		}
	}
	var files []indexed
	if err := s.list(s.f.root.hash, "", &files, pack); err != nil {
		abort()
		return nil, err
	}
	names := make([]string, len(files))
	for i := range files {
		names[i] = files[i].name
	}
	if err := s.prefetch(files); err != nil {
		abort()
		return nil, err
	}
	b := codeindex.NewBuilder(names, min(4, runtime.GOMAXPROCS(0)))
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, b.Shards())
	for k := range b.Shards() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = s.fill(b, k, files, pack)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		abort()
		return nil, err
	}
	ix, err := b.Index(s.key)
	if err != nil {
		abort()
		return nil, err
	}
	s.publishPack(pack)
	return ix, nil
}

// packWriter starts the tree pack the build writes as it reads the files,
// unless the mount already serves one or there is no cache directory; a
// pack that cannot be started is logged once, and the build goes on.
func (s *searcher) packWriter() *treePackWriter {
	path := s.packPathOf(s.key)
	if path == "" || s.f.blobs.pack.Load() != nil {
		return nil
	}
	w, err := newTreePackWriter(path, s.key)
	if err != nil {
		s.f.logOnce("treepack:"+path, "gitfs: cannot write the tree pack", "err", unwrapPath(err))
		return nil
	}
	return w
}

// usePack serves sizes and content from the tree pack in the cache
// directory of the tree with key (the mount's, or with anc an
// ancestor's), when there is a sound one; a bad one is removed, logged,
// and written again by the next index build of its tree. It reads the
// searcher, not s.f.search: an eager build publishes its pack before
// Open has set that.
func (s *searcher) usePack(key []byte, anc bool) {
	path := s.packPathOf(key)
	if path == "" {
		return // no cache directory
	}
	p, err := openTreePack(path, key)
	switch {
	case err == nil:
		usedTreePack(path)
		s.f.blobs.setPack(p, anc)
	case !errors.Is(err, fs.ErrNotExist):
		s.f.log.Warn("gitfs: tree pack ignored", "path", path, "err", unwrapPath(err))
		if errors.Is(err, errTreePackCorrupt) {
			os.Remove(path)
		}
	}
}

// packPathOf is where the tree pack of the tree with key is kept, ""
// without a cache directory.
func (s *searcher) packPathOf(key []byte) string {
	if s.cacheDir == "" {
		return ""
	}
	return treePackPath(s.cacheDir, key)
}

// publishPack finishes the tree pack and serves content from it.
func (s *searcher) publishPack(w *treePackWriter) {
	if w == nil {
		return
	}
	if err := w.finish(); err != nil {
		s.f.logOnce("treepack:"+s.packPathOf(s.key), "gitfs: cannot write the tree pack", "err", unwrapPath(err))
		return
	}
	s.usePack(s.key, false)
}

// prefetchBatch is how many objects one fetch of the index build asks a
// promisor remote for.
const prefetchBatch = 8192

// prefetch brings, in a partial clone, the blobs of files it lacks in a
// few large fetches: the index is made of every file's content, which
// would otherwise be fetched one by one. A fetch that fails (offline, the
// remote down) fails the build rather than have every file try alone:
// searches scan.
func (s *searcher) prefetch(files []indexed) error {
	if s.f.obj.Promisor() == "" {
		return nil
	}
	for lo := 0; lo < len(files); lo += prefetchBatch {
		if err := s.pause(); err != nil {
			return err
		}
		hs := make([]plumbing.Hash, 0, prefetchBatch)
		for _, fl := range files[lo:min(lo+prefetchBatch, len(files))] {
			hs = append(hs, fl.hash)
		}
		if err := s.f.obj.Prefetch(context.Background(), hs); err != nil {
			return fmt.Errorf("fetching the files to index: %w", err)
		}
	}
	return nil
}

// list appends the regular files below tree h, in walk order (the
// entries of a directory by name, each directory's contents after it),
// named below prefix; and puts the trees into the tree pack w, if any.
func (s *searcher) list(h plumbing.Hash, prefix string, out *[]indexed, w *treePackWriter) error {
	if s.stopped() {
		return errStopped
	}
	var t *tree
	var err error
	if w == nil {
		t, err = s.f.tree(h)
	} else {
		// Read once: into the pack, and decoded from the same bytes.
		var raw []byte
		if raw, err = s.f.obj.Bytes(plumbing.TreeObject, h); err == nil {
			w.add(h, raw)
			t, err = s.f.treeOf(h, raw)
		}
	}
	if err != nil {
		return err
	}
	for i := range t.entries {
		e := &t.entries[i]
		switch e.kind {
		case kindFile, kindExec:
			*out = append(*out, indexed{prefix + e.name, e.hash})
		case kindDir:
			if err := s.list(e.hash, prefix+e.name+"/", out, w); err != nil {
				return err
			}
		case kindGitlink:
			p := prefix + e.name
			if s.f.root.path != "." {
				p = mounts.Join(s.f.root.path, p)
			}
			if sub, ok := s.f.subs[p]; ok && !sub.tree.IsZero() {
				if err := s.list(sub.tree, prefix+e.name+"/", out, w); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *searcher) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return s.f.closed.Load()
	}
}

// fill indexes the files of shard k. A file that cannot be read is marked
// for scanning (the search then meets its error itself). While a scan is
// reading the mount (a search that could not use the index, a tar), the
// build waits, so that it does not slow the scan down.
// The content read goes into the tree pack w too, when there is one.
func (s *searcher) fill(b *codeindex.Builder, k int, files []indexed, w *treePackWriter) error {
	lo, hi := b.Range(k)
	var buf []byte
	cached := 0
	defer func() { s.fromCache.Add(int64(cached)) }()
	for id := lo; id < hi; id++ {
		if err := s.pause(); err != nil {
			return err
		}
		if bl, data := s.cached(files[id].hash, &buf); bl != nil {
			// Decoded by a read of the mount (the scan of the search
			// that started the build): no inflate.
			b.Add(k, id, data)
			if w != nil {
				w.add(files[id].hash, data)
			}
			s.f.blobs.release(bl)
			cached++
			continue
		}
		r, size, err := s.f.obj.Reader(plumbing.BlobObject, files[id].hash)
		if err != nil || size > codeindex.MaxFileSize {
			if r != nil {
				r.Close()
			}
			b.Scan(id)
			continue
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		_, err = io.ReadFull(r, buf)
		r.Close()
		if err != nil {
			b.Scan(id)
			continue
		}
		if w != nil {
			// Into the tree pack too: the daemons that search with
			// this index later read the candidates from there.
			w.add(files[id].hash, buf)
		} else if st := s.f.blobs.store; st != nil {
			// Into the blob store, failing that.
			if err := st.write(files[id].hash, buf); err != nil {
				st.fail(err)
			}
		}
		b.Add(k, id, buf)
	}
	return nil
}

// cached returns blob h pinned in the blob cache, and its content, when
// the cache (or the tree pack) holds it: its memory, or read into *buf's storage if it
// spilled to disk. The caller releases it.
func (s *searcher) cached(h plumbing.Hash, buf *[]byte) (*blob, []byte) {
	bl, err := s.f.blobs.pin(h)
	if bl == nil && err == nil {
		bl = s.f.blobs.packed(h) // a build whose index was lost, not its pack
	}
	if bl == nil || err != nil {
		return nil, nil
	}
	if bl.size > codeindex.MaxFileSize {
		s.f.blobs.release(bl)
		return nil, nil
	}
	data, err := bl.bytes(*buf)
	if err != nil {
		s.f.blobs.release(bl)
		return nil, nil
	}
	if bl.file != nil {
		*buf = data
	}
	return bl, data
}

// pause waits while a scan reads the mount, or may be about to; it fails
// once the mount closes.
func (s *searcher) pause() error {
	for s.f.walk.scanning() || time.Now().UnixNano() < s.quietUntil.Load() {
		t0 := time.Now()
		select {
		case <-s.stop:
			return errStopped
		case <-time.After(scanPause):
		}
		s.paused.Add(int64(time.Since(t0)))
	}
	if s.stopped() {
		return errStopped
	}
	return nil
}

// scanPause is how often a build waiting for a scan to end looks again.
const scanPause = 20 * time.Millisecond
