package memfs

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Options configure a memory mount. The zero value is a usable, unlimited
// mount owned by the calling process.
type Options struct {
	// Uid and Gid own new entries when the context carries no
	// mounts.Caller. Zero means the process's own ids (os.Getuid,
	// os.Getgid); a process that is root gets 0 either way.
	Uid, Gid uint32
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxBytes bounds the bytes held (file pages, symlink targets,
	// extended attributes); MaxFiles bounds the entries besides the root.
	// 0 means unlimited. Exceeding either fails with mounts.ErrNoSpace.
	MaxBytes, MaxFiles int64
	// Logger receives store failures; nil is silent.
	Logger *slog.Logger
	// Store receives every change for persistence (see [Store]); nil
	// keeps the tree in memory only.
	Store Store
}

// FS is a memory mount. It implements mounts.FS and every capability
// interface of the contract; it is safe for concurrent use.
type FS struct {
	log                *slog.Logger
	now                func() time.Time
	uid, gid           uint32
	maxBytes, maxFiles int64
	store              Store

	// mu is the tree lock. It guards the children of every directory and
	// nextIno. Operations that only look names up take it shared, those
	// that add, remove or move names take it exclusively. Lock order is
	// mu, then node.mu; no goroutine holds two node locks at once, and
	// open files take only their node's lock.
	mu      sync.RWMutex
	root    *node
	nextIno uint64

	usedBytes atomic.Int64
	usedFiles atomic.Int64

	ckptState

	// lz is the content a lazily restored tree has not fetched yet
	// (lazy.go); nil for any other tree.
	lz *lazyState
}

var (
	_ mounts.OpenFileFS = (*FS)(nil)
	_ mounts.TruncateFS = (*FS)(nil)
	_ mounts.MkdirFS    = (*FS)(nil)
	_ mounts.RemoveFS   = (*FS)(nil)
	_ mounts.RenameFS   = (*FS)(nil)
	_ mounts.SymlinkFS  = (*FS)(nil)
	_ mounts.MknodFS    = (*FS)(nil)
	_ mounts.LinkFS     = (*FS)(nil)
	_ mounts.ChmodFS    = (*FS)(nil)
	_ mounts.ChownFS    = (*FS)(nil)
	_ mounts.ChtimesFS  = (*FS)(nil)
	_ mounts.SetXattrFS = (*FS)(nil)
	_ mounts.StatFSer   = (*FS)(nil)
	_ mounts.Describer  = (*FS)(nil)
)

// New returns an empty memory mount: a root directory, mode 0755, inode 1.
func New(opts Options) *FS {
	f := &FS{
		log: opts.Logger, now: opts.Now, uid: opts.Uid, gid: opts.Gid,
		maxBytes: opts.MaxBytes, maxFiles: opts.MaxFiles, store: opts.Store,
		nextIno: 2,
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.uid == 0 {
		f.uid = uint32(os.Getuid())
	}
	if f.gid == 0 {
		f.gid = uint32(os.Getgid())
	}
	now := f.now()
	f.root = &node{
		ino: 1, typ: fs.ModeDir, perm: 0o755, uid: f.uid, gid: f.gid, nlink: 2,
		atime: now, mtime: now, ctime: now, children: map[string]*node{},
	}
	return f
}

// Describe reports the mount type.
func (f *FS) Describe() mounts.Description {
	return mounts.Description{Type: "memory", Source: "memory"}
}

func pathErr(op, name string, err error) error { return mounts.PathErr(op, name, err) }

// walk finds the node of a checked name without following symlinks; the
// caller holds f.mu. A non-directory in the middle of the path (a symlink
// included: memfs never follows one) is ErrNotDir.
func (f *FS) walk(name string) (*node, error) {
	n := f.root
	if name == "." {
		return n, nil
	}
	for rest := name; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, "/")
		if !n.isDir() {
			return nil, mounts.ErrNotDir
		}
		child, ok := n.children[elem]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = child
	}
	return n, nil
}

// walkParent finds the directory that holds a checked name other than ".",
// and the name's last component; the caller holds f.mu.
func (f *FS) walkParent(name string) (*node, string, error) {
	dirName, base := mounts.Split(name)
	dir, err := f.walk(dirName)
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir() {
		return nil, "", mounts.ErrNotDir
	}
	return dir, base, nil
}

// lookup checks name and finds its node under a shared tree lock, which it
// returns held: the caller releases f.mu.RUnlock when err is nil.
func (f *FS) lookup(op, name string) (*node, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	f.mu.RLock()
	n, err := f.walk(name)
	if err != nil {
		f.mu.RUnlock()
		return nil, pathErr(op, name, err)
	}
	return n, nil
}

// Stat returns the attributes of name, without following a final symlink.
func (f *FS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	n, err := f.lookup("stat", name)
	if err != nil {
		return mounts.Attr{}, err
	}
	defer f.mu.RUnlock()
	return n.stat(), nil
}

// ReadDir lists a directory sorted by name.
func (f *FS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	n, err := f.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	defer f.mu.RUnlock()
	if !n.isDir() {
		return nil, pathErr("readdir", name, mounts.ErrNotDir)
	}
	ents := make([]mounts.DirEntry, 0, len(n.children))
	for elem, child := range n.children {
		ents = append(ents, mounts.DirEntry{Name: elem, Type: child.typ, Ino: child.ino})
	}
	slices.SortFunc(ents, func(a, b mounts.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return ents, nil
}

// ReadLink returns a symlink's target as stored.
func (f *FS) ReadLink(ctx context.Context, name string) (string, error) {
	n, err := f.lookup("readlink", name)
	if err != nil {
		return "", err
	}
	defer f.mu.RUnlock()
	if !n.isSymlink() {
		return "", pathErr("readlink", name, fs.ErrInvalid)
	}
	return n.target, nil
}

// Open opens a regular file for reading.
func (f *FS) Open(ctx context.Context, name string) (mounts.File, error) {
	return f.OpenFile(ctx, name, os.O_RDONLY, 0)
}

// nominalBytes is the capacity statfs reports without a byte quota: large,
// so no tool refuses to write, and round, so nobody mistakes it for RAM.
const nominalBytes = 1 << 40

// nominalFiles is the inode count statfs reports without a file quota.
const nominalFiles = 1 << 32

// statBlock is the block size statfs reports in.
const statBlock = 4096

// StatFS reports usage against the quotas, or against a nominal 1 TiB and
// 2^32 files when there are none.
func (f *FS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	totalBytes, totalFiles := f.maxBytes, f.maxFiles
	if totalBytes == 0 {
		totalBytes = nominalBytes
	}
	if totalFiles == 0 {
		totalFiles = nominalFiles
	}
	usedBlocks := (f.usedBytes.Load() + statBlock - 1) / statBlock
	free := max(totalBytes/statBlock-usedBlocks, 0)
	st := mounts.FSStat{
		Bsize:   statBlock,
		Blocks:  uint64(totalBytes / statBlock),
		Bfree:   uint64(free),
		Bavail:  uint64(free),
		Files:   uint64(totalFiles),
		Ffree:   uint64(max(totalFiles-f.usedFiles.Load(), 0)),
		NameLen: mounts.MaxNameLen,
	}
	return st, nil
}

// reserve charges n (which may be negative) to a usage counter, refusing
// growth past limit (0 = unlimited).
func reserve(used *atomic.Int64, limit, n int64) bool {
	if n <= 0 || limit == 0 {
		used.Add(n)
		return true
	}
	for {
		cur := used.Load()
		if cur+n > limit {
			return false
		}
		if used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

func (f *FS) reserveBytes(n int64) bool { return reserve(&f.usedBytes, f.maxBytes, n) }

// owner returns the ids of a new entry in dir: the caller's, or the mount's
// defaults. A setgid directory passes its group down, as on Linux.
func (f *FS) owner(ctx context.Context, dir *node) (uid, gid uint32, setgid bool) {
	uid, gid = f.uid, f.gid
	if c, ok := mounts.CallerFrom(ctx); ok {
		uid, gid = c.Uid, c.Gid
	}
	dir.mu.RLock()
	defer dir.mu.RUnlock()
	if dir.perm&fs.ModeSetgid != 0 {
		return uid, dir.gid, true
	}
	return uid, gid, false
}

// create makes a node and links it into dir under base; the caller holds
// f.mu exclusively and checked that base is free. It charges the file
// quota and, for a symlink, the byte quota.
func (f *FS) create(ctx context.Context, j *journal, dir *node, base string, typ, perm fs.FileMode, target string, rdev uint32) (*node, error) {
	if !reserve(&f.usedFiles, f.maxFiles, 1) {
		return nil, mounts.ErrNoSpace
	}
	if !f.reserveBytes(int64(len(target))) {
		f.usedFiles.Add(-1)
		return nil, mounts.ErrNoSpace
	}
	uid, gid, setgid := f.owner(ctx, dir)
	perm &= permBits
	if typ == fs.ModeDir && setgid {
		perm |= fs.ModeSetgid
	}
	now := f.now()
	n := &node{
		ino: f.nextIno, typ: typ, target: target, rdev: rdev, perm: perm, uid: uid, gid: gid, nlink: 1,
		atime: now, mtime: now, ctime: now,
	}
	f.nextIno++
	if typ == fs.ModeDir {
		n.nlink = 2
		n.children = map[string]*node{}
	}
	j.inode(n)
	if f.index != nil {
		f.index[n.ino] = n
	}
	dir.children[base] = n
	j.entry(dir, base, n)
	dir.mu.Lock()
	if typ == fs.ModeDir {
		dir.nlink++
	}
	dir.changed(now, true)
	j.inode(dir)
	dir.mu.Unlock()
	return n, nil
}

// release frees n's resources once it has neither a name nor an open
// handle; the caller holds n.mu.
func (f *FS) release(j *journal, n *node) {
	if n.freed || n.nlink > 0 || n.opens > 0 {
		return
	}
	n.freed = true
	f.usedBytes.Add(-(n.data.release() + n.xattrBytes + int64(len(n.target))))
	f.usedFiles.Add(-1)
	n.xattrs, n.xattrBytes = nil, 0
	if !n.ghost {
		j.freed(n)
	}
}
