package gitfs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/objstore"
)

// Defaults of Options.
const (
	// DefaultCacheSize bounds the decoded blob cache.
	DefaultCacheSize = 256 << 20
	// spillAt is the blob size from which decoded content goes to disk
	// rather than memory (or CacheSize/8 when that is smaller).
	spillAt = 4 << 20
	// storeMemSize bounds the decoded content kept on the heap when the
	// mount has the blob store of a cache directory (blobstore.go): the
	// store keeps the rest, in the kernel's reclaimable page cache.
	storeMemSize = 16 << 20
	// treeCacheSize bounds the decoded trees kept for lookups.
	treeCacheSize = 32 << 20
)

// Options say what to serve and how.
type Options struct {
	// Src is a local repository (bare or not, or a worktree whose .git is
	// a file) or a URL (file://, https://, ssh://, ...).
	Src string
	// Rev is anything go-git resolves to a commit: a full or short SHA, a
	// branch, a tag, HEAD~3. Default "HEAD".
	Rev string
	// Subdir serves a subtree of the commit ("" or "." for all of it).
	Subdir string
	// CacheDir holds URL clones, search indexes and the blob store of
	// decoded content (blobstore.go). Default
	// $XDG_CACHE_HOME/vfsmount, or ~/.cache/vfsmount.
	CacheDir string
	// Offline never fetches: a URL must already be in the cache, with
	// the revision, and an object a partial clone lacks is not fetched
	// from its promisor remote (reading it fails with EIO naming it).
	Offline bool
	// CacheSize bounds the decoded blob cache, in bytes, memory and
	// spilled content together. Default DefaultCacheSize. With a cache
	// directory, decoded content is kept in its blob store
	// (CacheDir/blobs, shared by every mount and daemon using it) and the
	// cache on the heap holds at most storeMemSize (16 MiB) of it.
	CacheSize int64
	// Progress receives clone and fetch progress when non-nil.
	Progress io.Writer
	// Logger receives the mount's log lines; nil is silent.
	Logger *slog.Logger
	// Index says when the search index of the tree is built (see
	// "Search" in the package doc): on the first search (the default),
	// at Open, or never.
	Index IndexMode
	// Submodules serves each gitlink as the tree of the commit it pins,
	// when the submodule's repository is found (submodules.go); without
	// it, or without the repository, a gitlink is an empty directory.
	Submodules bool
}

// FS is one commit of a repository, read-only. It implements mounts.FS,
// mounts.XattrFS, mounts.StatFSer, mounts.Describer, mounts.StatDirFS and
// mounts.PageOfferer, and nothing that writes. It is safe for concurrent
// use.
type FS struct {
	commit plumbing.Hash
	// commitTree is the commit's tree (root is a subdir's, with Subdir).
	commitTree plumbing.Hash
	root       node
	// subs says what each gitlink (by its path in the commit) serves,
	// with Options.Submodules; nil without. Written at Open only.
	subs   map[string]submodule
	subdir string // the served subtree, "" for the whole commit
	repo   string // the repository's directory (a clone's, for a URL), for export
	when   time.Time
	uid    uint32
	gid    uint32

	obj    *objstore.Store
	trees  *treeCache
	blobs  *blobCache
	walk   *walker
	search *searcher
	log    *slog.Logger
	logged sync.Map // keys already logged once
	// candidates are the names the last search of a partial clone named,
	// fetched in a batch of their own (prefetchNames): their reads start
	// no scan's fetch of their directories.
	candidates atomic.Pointer[map[string]bool]
	closed     atomic.Bool
}

var (
	_ mounts.FS          = (*FS)(nil)
	_ mounts.XattrFS     = (*FS)(nil)
	_ mounts.StatFSer    = (*FS)(nil)
	_ mounts.Describer   = (*FS)(nil)
	_ mounts.StatDirFS   = (*FS)(nil)
	_ mounts.ContentFile = (*file)(nil)
	_ mounts.OpenWithFS  = (*FS)(nil)

	_ mounts.PageOfferer = (*FS)(nil)
)

// node is a resolved name.
type node struct {
	kind kind
	hash plumbing.Hash
	path string // in the commit (subdir included), for inode numbers
	e    *entry // nil for the root
}

// Open opens opts.Src and pins opts.Rev. Bad input fails with an error that
// wraps ErrBadSource, ErrBadRev or ErrBadSubdir and names the source or
// revision; a context that ends fails with its error.
func Open(ctx context.Context, opts Options) (*FS, error) {
	if opts.Src == "" {
		return nil, badSource("", errors.New("empty"))
	}
	rev := opts.Rev
	if rev == "" {
		rev = "HEAD"
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		d, err := defaultCacheDir()
		if err != nil && isURL(opts.Src) {
			return nil, badSource(opts.Src, fmt.Errorf("no cache directory: %w", err))
		}
		cacheDir = d
	}
	subdir, err := cleanSubdir(opts.Subdir)
	if err != nil {
		return nil, err
	}

	path := opts.Src
	remote := isURL(opts.Src)
	if remote {
		c, err := lockClone(ctx, opts.Src, cacheDir, opts.Offline, opts.Progress)
		if err != nil {
			return nil, err
		}
		defer c.unlock()
		path = c.dir
	} else if _, err := os.Stat(path); err != nil {
		return nil, badSource(opts.Src, unwrapPath(err))
	}

	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	storeOpts := objstore.Options{Offline: opts.Offline, OnFetch: func(remote string, n int, took time.Duration, err error) {
		if err != nil {
			log.Warn("gitfs: fetch from the promisor remote failed", "src", redact(opts.Src), "remote", remote, "objects", n, "err", err)
			return
		}
		log.Info("gitfs: fetched from the promisor remote", "src", redact(opts.Src), "remote", remote, "objects", n, "took", took.Round(time.Millisecond))
	}}
	obj, err := objstore.OpenWith(path, storeOpts)
	if err != nil {
		return nil, badSource(opts.Src, err)
	}
	commit, err := resolveRev(obj, rev)
	if err != nil && remote && !opts.Offline && errors.Is(err, ErrBadRev) {
		// The clone may predate the revision: fetch once and retry.
		if ferr := fetch(ctx, obj.Repository(), opts.Progress); ferr != nil {
			obj.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, badSource(opts.Src, fmt.Errorf("fetch: %w", ferr))
		}
		obj.Close()
		if obj, err = objstore.OpenWith(path, storeOpts); err != nil {
			return nil, badSource(opts.Src, err)
		}
		commit, err = resolveRev(obj, rev)
	}
	if err != nil {
		obj.Close()
		return nil, err
	}
	c, err := obj.Repository().CommitObject(commit)
	if err != nil {
		obj.Close()
		return nil, fmt.Errorf("gitfs: rev %q: %w: %w", rev, ErrBadRev, err)
	}

	repoDir, err := filepath.Abs(path)
	if err != nil {
		obj.Close()
		return nil, badSource(opts.Src, err)
	}
	f := &FS{
		commit: commit,
		subdir: subdir,
		repo:   repoDir,
		when:   c.Committer.When,
		uid:    uint32(os.Getuid()),
		gid:    uint32(os.Getgid()),
		obj:    obj,
		trees:  newTreeCache(treeCacheSize),
		log:    log,
	}
	if remote := obj.Promisor(); remote != "" {
		f.log.Info("gitfs: partial clone: missing objects are fetched from the promisor remote as they are read",
			"src", redact(opts.Src), "remote", remote, "offline", opts.Offline)
	}
	if alt := obj.Alternates(); alt != nil {
		// As git says it, and goes on: the objects of the other
		// directories are still served; a read of one that is in none
		// of them fails with EIO, logged with this again.
		f.log.Warn("gitfs: alternate object directory skipped", "src", redact(opts.Src), "err", alt)
	}
	f.walk = newWalker(f)
	size := opts.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	spillDir := "" // without a cache directory, decoded content stays in memory
	var store *blobStore
	if cacheDir != "" {
		spillDir = filepath.Join(cacheDir, "spill")
		// The shared store keeps what is decoded, in files the kernel
		// caches and can reclaim: the heap keeps only a little of it.
		size = min(size, storeMemSize)
		store = newBlobStore(filepath.Join(cacheDir, "blobs"), func(err error) {
			f.log.Warn("gitfs: decoded content not kept in the blob store", "err", unwrapPath(err))
		})
	}
	f.blobs = newBlobCache(size, min(spillAt, max(size/8, 1)), spillDir, func(err error) {
		f.log.Warn("gitfs: decoded content stays in memory: cannot spill to disk", "err", unwrapPath(err))
	})
	f.blobs.store = store

	f.root = node{kind: kindDir, hash: c.TreeHash, path: "."}
	f.commitTree = c.TreeHash
	if opts.Submodules {
		f.openSubmodules(ctx, opts, repoDir, cacheDir)
	}
	if subdir != "" {
		n, err := f.resolve(ctx, "open", subdir)
		if err != nil || !n.kind.isDir() || n.kind == kindGitlink {
			f.Close()
			cause := error(errors.New("not a directory"))
			if err != nil {
				cause = errors.Unwrap(err)
			}
			return nil, fmt.Errorf("gitfs: subdir %q at %s: %w: %w", subdir, commit, ErrBadSubdir, cause)
		}
		f.root = n
	}
	// The root tree is the one object a mount reads up front, so that a
	// broken repository fails here rather than on the first ls.
	if _, err := f.tree(f.root.hash); err != nil {
		f.Close()
		return nil, badSource(opts.Src, fmt.Errorf("root tree %s: %w", f.root.hash, err))
	}
	f.search = newSearcher(f, cacheDir, opts.Index)
	f.search.usePack(f.search.key, false)
	return f, nil
}

// cleanSubdir validates Subdir and returns it clean, "" for the root.
func cleanSubdir(s string) (string, error) {
	s = strings.Trim(s, "/")
	if s == "" || s == "." {
		return "", nil
	}
	if err := checkName("open", s); err != nil {
		return "", fmt.Errorf("gitfs: subdir %q: %w: %w", s, ErrBadSubdir, errors.Unwrap(err))
	}
	return s, nil
}

// Commit returns the full SHA of the pinned commit.
func (f *FS) Commit() string { return f.commit.String() }

// Describe says what the mount is: "git@" and the short SHA, and the subdir
// when only a subtree is served.
func (f *FS) Describe() mounts.Description {
	src := "git@" + f.commit.String()[:12]
	if f.subdir != "" {
		src += ":" + f.subdir
	}
	return mounts.Description{Type: "git", Source: src, Immutable: true}
}

// Close releases the repository and the caches. Files still open keep
// their content until they close.
func (f *FS) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	if f.search != nil {
		f.search.close()
	}
	f.walk.close()
	f.blobs.close()
	return f.obj.Close()
}

// checkName applies mounts.CheckPath plus the git rule: no ".git" component.
func checkName(op, name string) error {
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	for rest := name; rest != ""; {
		elem, tail, _ := strings.Cut(rest, "/")
		if elem == ".git" {
			return mounts.PathErr(op, name, fs.ErrInvalid)
		}
		rest = tail
	}
	return nil
}

// tree returns the decoded tree h, from the cache, a tree pack or the
// repository.
func (f *FS) tree(h plumbing.Hash) (*tree, error) {
	if t := f.trees.get(h); t != nil {
		return t, nil
	}
	var t *tree
	var err error
	// The tree packs hold the trees of their trees too.
	if f.blobs.inPacks(func(p *treePack) bool {
		raw, ok := p.content(h)
		if ok {
			t, err = f.treeOf(h, raw) // parseTree copies what it keeps
		}
		return ok
	}) {
		return t, err
	}
	raw, err := f.obj.Bytes(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return f.treeOf(h, raw)
}

// treeOf decodes raw, the object of tree h, into the cache, unless it is
// there; the entries it hides are logged once.
func (f *FS) treeOf(h plumbing.Hash, raw []byte) (*tree, error) {
	if t := f.trees.get(h); t != nil {
		return t, nil
	}
	t, bad, err := parseTree(raw)
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		f.logOnce("hidden:"+h.String()+"\x00"+b.name, "gitfs: tree entry hidden",
			"tree", h.String(), "name", fmt.Sprintf("%q", b.name), "reason", b.reason)
	}
	return f.trees.put(h, t), nil
}

// resolve walks name from the root, reading only the trees on its path.
func (f *FS) resolve(ctx context.Context, op, name string) (node, error) {
	if err := checkName(op, name); err != nil {
		return node{}, err
	}
	if f.closed.Load() {
		return node{}, mounts.PathErr(op, name, fs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return node{}, mounts.PathErr(op, name, err)
	}
	n := f.root
	if name == "." {
		return n, nil
	}
	for rest := name; rest != ""; {
		elem, tail, more := strings.Cut(rest, "/")
		rest = tail
		// The path so far is a prefix of name: no allocation (but
		// for a subdir mount, whose paths start with the subdir).
		upTo := len(name) - len(tail)
		if more {
			upTo--
		}
		switch {
		case n.kind == kindGitlink:
			if err := f.submoduleErr(op, name, n); err != nil {
				return node{}, err
			}
			return node{}, mounts.PathErr(op, name, fs.ErrNotExist)
		case !n.kind.isDir():
			return node{}, mounts.PathErr(op, name, mounts.ErrNotDir)
		}
		t, err := f.tree(n.hash)
		if err != nil {
			return node{}, f.eio(op, name, n.hash, err)
		}
		e := t.find(elem)
		if e == nil {
			return node{}, mounts.PathErr(op, name, fs.ErrNotExist)
		}
		p := name[:upTo]
		if f.root.path != "." {
			p = mounts.Join(f.root.path, p) // below a subdir
		}
		n = f.mapSubmodule(node{kind: e.kind, hash: e.hash, path: p, e: e})
	}
	return n, nil
}

// eio logs a corrupt or missing object once and returns EIO for name. An
// object a partial clone could not get from its promisor remote is named
// in the error too (the kernel face sees EIO; the tool face, why).
func (f *FS) eio(op, name string, h plumbing.Hash, err error) error {
	if isContextErr(err) {
		return mounts.PathErr(op, name, err)
	}
	var perr *objstore.PromisorError
	if errors.As(err, &perr) {
		// Not once: the remote may be back for the next read.
		f.log.Warn("gitfs: cannot read object", "object", h.String(), "path", name, "err", err)
		return mounts.PathErr(op, name, fmt.Errorf("%w: %w", perr, syscall.EIO))
	}
	f.logOnce("eio:"+h.String(), "gitfs: cannot read object", "object", h.String(), "path", name, "err", unwrapPath(err))
	return mounts.PathErr(op, name, syscall.EIO)
}

// prefetchDir fetches in one batch the blobs of t a partial clone lacks
// and whose sizes are not known yet: what listing it with attributes, or
// reading its files, is about to ask for one by one. Errors are left for
// the reads to meet; the fetch's is returned when waiting.
func (f *FS) prefetchDir(ctx context.Context, t *tree, after string, wait bool) error {
	if f.obj.Promisor() == "" {
		return nil
	}
	var hs []plumbing.Hash
	for i := range t.entries {
		e := &t.entries[i]
		if e.name > after && e.kind != kindDir && e.kind != kindGitlink && e.loadSize() < 0 {
			hs = append(hs, e.hash)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	if wait {
		return f.obj.Prefetch(ctx, hs)
	}
	f.obj.PrefetchAsync(hs)
	return nil
}

func (f *FS) logOnce(key, msg string, args ...any) {
	if _, seen := f.logged.LoadOrStore(key, true); !seen {
		f.log.Warn(msg, args...)
	}
}

// ino derives a stable inode number from an object id and a path in the
// commit: 56 bits (the union puts its mount index in the top 8), nonzero.
func ino(h plumbing.Hash, path string) uint64 {
	d := fnv.New64a()
	d.Write(h[:])
	d.Write([]byte(path))
	n := d.Sum64() & (1<<56 - 1)
	if n == 0 {
		n = 1
	}
	return n
}

// attr builds the attributes of a resolved node. Directories read their own
// tree for the link count; files read their object header for the size.
func (f *FS) attr(op, name string, n node) (mounts.Attr, error) {
	return f.attrOf(op, name, n, true)
}

// attrOf is attr, with a file's size left 0 unless sized.
func (f *FS) attrOf(op, name string, n node, sized bool) (mounts.Attr, error) {
	a := mounts.Attr{
		Ino: ino(n.hash, n.path), Nlink: 1, Uid: f.uid, Gid: f.gid,
		Atime: f.when, Mtime: f.when, Ctime: f.when,
	}
	switch n.kind {
	case kindDir:
		t, err := f.tree(n.hash)
		if err != nil {
			return mounts.Attr{}, f.eio(op, name, n.hash, err)
		}
		a.Mode = fs.ModeDir | 0o755
		a.Nlink = 2 + t.subdirs
	case kindGitlink:
		a.Mode = fs.ModeDir | 0o755
		a.Nlink = 2
	default:
		if sized {
			size, err := f.size(n)
			if err != nil {
				return mounts.Attr{}, f.eio(op, name, n.hash, err)
			}
			a.Size = size
		}
		switch n.kind {
		case kindExec:
			a.Mode = 0o755
		case kindSymlink:
			a.Mode = fs.ModeSymlink | 0o777
		default:
			a.Mode = 0o644
		}
	}
	return a, nil
}

// size returns a blob's size from the tree pack, or else its header,
// remembered in its entry.
func (f *FS) size(n node) (int64, error) {
	if n.e != nil {
		if s := n.e.loadSize(); s >= 0 {
			return s, nil
		}
	}
	var s int64
	var err error
	if !f.blobs.inPacks(func(p *treePack) bool {
		var ok bool
		s, ok = p.size(n.hash)
		return ok
	}) {
		s, err = f.obj.Size(n.hash)
	}
	if err != nil {
		return 0, err
	}
	if n.e != nil {
		n.e.storeSize(s)
	}
	return s, nil
}

// Stat returns the attributes of name; symlinks are not followed.
func (f *FS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	n, err := f.resolve(ctx, "stat", name)
	if err != nil {
		return mounts.Attr{}, err
	}
	return f.attr("stat", name, n)
}

// ReadDir lists a directory sorted by name. A submodule lists empty.
func (f *FS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	n, t, err := f.dir(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case t == nil:
		return []mounts.DirEntry{}, nil
	}
	out := make([]mounts.DirEntry, len(t.entries))
	for i := range t.entries {
		out[i] = f.mapSubmodule(n.child(&t.entries[i])).dirEntry()
	}
	return out, nil
}

// child is the node of entry e of directory n.
func (n node) child(e *entry) node {
	return node{kind: e.kind, hash: e.hash, path: mounts.Join(n.path, e.name), e: e}
}

// dirEntry is what a listing says of n, an entry of its directory.
func (n node) dirEntry() mounts.DirEntry {
	return mounts.DirEntry{Name: n.e.name, Type: typeOf(n.kind), Ino: ino(n.hash, n.path)}
}

// StatDir lists a directory with the attributes of its entries
// (mounts.StatDirFS): one walk to the directory instead of one per entry.
func (f *FS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	n, t, err := f.dir(ctx, name)
	switch {
	case err != nil:
		return nil, nil, err
	case t == nil:
		return []mounts.DirEntry{}, []mounts.Attr{}, nil
	}
	_ = f.prefetchDir(ctx, t, "", true) // a failure is the first missing entry's
	ents := make([]mounts.DirEntry, len(t.entries))
	attrs := make([]mounts.Attr, len(t.entries))
	for i := range t.entries {
		child := f.mapSubmodule(n.child(&t.entries[i]))
		ents[i] = child.dirEntry()
		if attrs[i], err = f.attr("stat", mounts.Join(name, child.e.name), child); err != nil {
			return nil, nil, err
		}
	}
	f.walk.listed(name, t)
	return ents, attrs, nil
}

// dir resolves the directory name and reads its tree; a submodule has none
// (nil, listed empty).
func (f *FS) dir(ctx context.Context, name string) (node, *tree, error) {
	n, err := f.resolve(ctx, "readdir", name)
	if err != nil {
		return node{}, nil, err
	}
	switch {
	case n.kind == kindGitlink:
		if err := f.submoduleErr("readdir", name, n); err != nil {
			return node{}, nil, err
		}
		return n, nil, nil
	case !n.kind.isDir():
		return node{}, nil, mounts.PathErr("readdir", name, mounts.ErrNotDir)
	}
	t, err := f.tree(n.hash)
	if err != nil {
		return node{}, nil, f.eio("readdir", name, n.hash, err)
	}
	return n, t, nil
}

func typeOf(k kind) fs.FileMode {
	switch k {
	case kindDir, kindGitlink:
		return fs.ModeDir
	case kindSymlink:
		return fs.ModeSymlink
	}
	return 0
}

// ReadLink returns a symlink's target as stored.
func (f *FS) ReadLink(ctx context.Context, name string) (string, error) {
	n, err := f.resolve(ctx, "readlink", name)
	if err != nil {
		return "", err
	}
	if n.kind != kindSymlink {
		return "", mounts.PathErr("readlink", name, fs.ErrInvalid)
	}
	b, err := f.obj.Bytes(plumbing.BlobObject, n.hash)
	if err != nil {
		return "", f.eio("readlink", name, n.hash, err)
	}
	return string(b), nil
}

// Open opens a regular file; its content is decoded here, once, into the
// shared cache.
func (f *FS) Open(ctx context.Context, name string) (mounts.File, error) {
	return f.OpenWith(ctx, name, mounts.OpenOptions{})
}

// OpenWith is Open acting on the caller's options: a file whose pages the
// caller keeps (PagesKept) leaves the blob cache once read whole and
// closed, and one opened in case (InCase) is decoded at its first read, if
// any, and counts towards no scan.
func (f *FS) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	n, err := f.resolve(ctx, "open", name)
	if err != nil {
		return nil, err
	}
	switch {
	case n.kind.isDir():
		return nil, mounts.PathErr("open", name, mounts.ErrIsDir)
	case n.kind == kindSymlink:
		return nil, mounts.PathErr("open", name, mounts.ErrLoop)
	}
	a, err := f.attr("open", name, n)
	if err != nil {
		return nil, err
	}
	fl := &file{fs: f, name: name, attr: a, hash: n.hash, kept: o.PagesKept}
	if o.InCase {
		// Decoded at the first read, if any, and no part of a scan.
		return fl, nil
	}
	f.walk.opened(name, !o.Scan)
	if _, err := fl.blob(ctx, "open"); err != nil {
		return nil, err
	}
	return fl, nil
}

// blob returns fl's content, pinned in the blob cache from the first call
// on (at the open, or at the first read of a file opened in case,
// mounts.OpenOptions.InCase).
func (fl *file) blob(ctx context.Context, op string) (*blob, error) {
	fl.bmu.Lock()
	defer fl.bmu.Unlock()
	if fl.b != nil {
		return fl.b, nil
	}
	f := fl.fs
	b, err := f.blobs.acquire(ctx, fl.hash, func(context.Context) (io.ReadCloser, int64, error) {
		return f.obj.Reader(plumbing.BlobObject, fl.hash)
	})
	switch {
	case errors.Is(err, errCacheClosed):
		return nil, mounts.PathErr(op, fl.name, fs.ErrClosed)
	case err != nil:
		return nil, f.eio(op, fl.name, fl.hash, err)
	case b.size != fl.attr.Size:
		f.blobs.release(b)
		return nil, f.eio(op, fl.name, fl.hash, objstore.ErrSizeMismatch)
	}
	if !fl.kept {
		f.blobs.hold(b)
	}
	fl.b = b
	return b, nil
}

// file is an open regular file; its content is pinned in the blob cache.
type file struct {
	fs   *FS
	name string
	attr mounts.Attr
	hash plumbing.Hash
	// b is the content once pinned (see blob); bmu guards it.
	bmu sync.Mutex
	b   *blob
	// kept says the reader keeps the pages it reads
	// (mounts.OpenOptions.PagesKept);
	// readEnd is the end of the furthest read, so Close can tell
	// whether the reader has all of the content.
	kept    bool
	readEnd atomic.Int64
	mu      sync.RWMutex // guards closed against ReadAt racing Close
	closed  bool
}

func (fl *file) ReadAt(p []byte, off int64) (int, error) {
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	if fl.closed {
		return 0, mounts.PathErr("read", fl.name, fs.ErrClosed)
	}
	if off < 0 {
		return 0, mounts.PathErr("read", fl.name, fs.ErrInvalid)
	}
	b, err := fl.blob(context.Background(), "read")
	if err != nil {
		return 0, err
	}
	n, err := b.readAt(p, off)
	if err != nil && err != io.EOF {
		return n, fl.fs.eio("read", fl.name, b.hash, err)
	}
	if fl.kept {
		end := off + int64(n)
		for cur := fl.readEnd.Load(); end > cur && !fl.readEnd.CompareAndSwap(cur, end); cur = fl.readEnd.Load() {
		}
	}
	return n, err
}

func (fl *file) Stat() (mounts.Attr, error) { return fl.attr, nil }

// Content returns the blob's bytes in place when they are in memory or in
// a tree pack's mapping (mounts.ContentFile): pinned while the file is
// open, and never changed. A blob spilled to a file is read with ReadAt.
func (fl *file) Content() ([]byte, bool) {
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	if fl.closed {
		return nil, false
	}
	b, err := fl.blob(context.Background(), "read")
	if err != nil || b.file != nil || int64(len(b.mem)) != b.size {
		return nil, false
	}
	return b.mem[:b.size:b.size], true
}

func (fl *file) Close() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return mounts.PathErr("close", fl.name, fs.ErrClosed)
	}
	fl.closed = true
	switch {
	case fl.b == nil: // opened in case, never read
	case fl.kept:
		fl.fs.blobs.releaseKept(fl.b, fl.readEnd.Load() >= fl.b.size)
	default:
		fl.fs.blobs.release(fl.b)
	}
	return nil
}

// Extended attributes.
const (
	xattrCommit    = "user.git.commit"
	xattrOID       = "user.git.oid"
	xattrSubmodule = "user.git.submodule"
)

// GetXattr reads user.git.commit (on the root), user.git.oid (everywhere)
// and user.git.submodule (on a gitlink). Anything else is ErrNoAttr.
func (f *FS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	n, err := f.resolve(ctx, "getxattr", name)
	if err != nil {
		return nil, err
	}
	switch {
	case attr == xattrOID:
		return []byte(n.hash.String()), nil
	case attr == xattrCommit && name == ".":
		return []byte(f.commit.String()), nil
	case attr == xattrSubmodule && n.isGitlink():
		return []byte(n.e.hash.String()), nil
	}
	return nil, mounts.PathErr("getxattr", name, mounts.ErrNoAttr)
}

// ListXattr lists the attributes GetXattr serves for name.
func (f *FS) ListXattr(ctx context.Context, name string) ([]string, error) {
	n, err := f.resolve(ctx, "listxattr", name)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if name == "." {
		out = append(out, xattrCommit)
	}
	out = append(out, xattrOID)
	if n.isGitlink() {
		out = append(out, xattrSubmodule)
	}
	return out, nil
}

// StatFS reports a full, read-only file system, as squashfs or an ISO
// image does: nothing is free, and names are up to 255 bytes.
func (f *FS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	if err := ctx.Err(); err != nil {
		return mounts.FSStat{}, mounts.PathErr("statfs", ".", err)
	}
	return mounts.FSStat{Bsize: 4096, NameLen: mounts.MaxNameLen}, nil
}
