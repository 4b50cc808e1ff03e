package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/lru"
)

// kind is what a tree entry serves as.
type kind uint8

const (
	kindFile kind = iota + 1
	kindExec
	kindDir
	kindSymlink
	kindGitlink // a submodule: served as an empty directory
)

func (k kind) isDir() bool { return k == kindDir || k == kindGitlink }

// kindOf maps a git tree mode to a kind. Git writes only these modes;
// 100664 is the one historical variant git itself still accepts.
func kindOf(mode uint32) (kind, bool) {
	switch mode {
	case 0o100644, 0o100664:
		return kindFile, true
	case 0o100755:
		return kindExec, true
	case 0o040000:
		return kindDir, true
	case 0o120000:
		return kindSymlink, true
	case 0o160000:
		return kindGitlink, true
	}
	return 0, false
}

// entry is one servable entry of a decoded tree.
type entry struct {
	name string
	kind kind
	hash plumbing.Hash
	// size of the blob, read from its header on first Stat; -1 until then.
	// Accessed atomically: entries are shared by every lookup.
	size int64
}

func (e *entry) loadSize() int64   { return atomic.LoadInt64(&e.size) }
func (e *entry) storeSize(n int64) { atomic.StoreInt64(&e.size, n) }

// tree is a decoded tree object: its servable entries sorted by name (git
// sorts a directory as if its name ended in "/", io/fs sorts by name).
type tree struct {
	entries []entry
	subdirs uint32
	cost    int64

	// For the walker (walk.go): the directory last listed with this
	// one in it, whether what StatDir needs of this one is read, whether
	// its subdirectories were queued, and the scans (readpattern's
	// numbers) its small files were decoded ahead for, as it was warmed,
	// and offered for, as it was listed: once per scan, as a later scan
	// may read them again after the kernel dropped its copy.
	parent  atomic.Pointer[tree]
	warm    atomic.Bool
	walked  atomic.Bool
	decoded atomic.Uint64
	offered atomic.Uint64
}

// find returns the entry called name, or nil. It reads the entries' names
// only: their sizes are stored concurrently, atomically.
func (t *tree) find(name string) *entry {
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].name >= name })
	if i == len(t.entries) || t.entries[i].name != name {
		return nil
	}
	return &t.entries[i]
}

// badEntry describes an entry parseTree hides.
type badEntry struct {
	name, reason string
}

var errCorruptTree = errors.New("malformed tree object")

// parseTree decodes the raw content of a tree object ("MODE NAME\0" then
// the binary object id, repeated). A malformed object is an error; a
// well-formed entry that cannot be served is hidden and reported in bad.
func parseTree(raw []byte) (t *tree, bad []badEntry, err error) {
	t = &tree{}
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		if sp <= 0 {
			return nil, nil, errCorruptTree
		}
		mode, perr := strconv.ParseUint(string(raw[:sp]), 8, 32)
		if perr != nil {
			return nil, nil, errCorruptTree
		}
		raw = raw[sp+1:]
		nul := bytes.IndexByte(raw, 0)
		if nul < 0 || len(raw) < nul+1+len(plumbing.ZeroHash) {
			return nil, nil, errCorruptTree
		}
		name := string(raw[:nul])
		var h plumbing.Hash
		copy(h[:], raw[nul+1:])
		raw = raw[nul+1+len(h):]

		k, ok := kindOf(uint32(mode))
		switch {
		case !ok:
			bad = append(bad, badEntry{name, fmt.Sprintf("unknown mode %o", mode)})
			continue
		case !validName(name):
			bad = append(bad, badEntry{name, "invalid name"})
			continue
		}
		t.entries = append(t.entries, entry{name: name, kind: k, hash: h, size: -1})
		t.cost += int64(len(name)) + entryOverhead
	}
	cmp := func(a, b entry) int { return strings.Compare(a.name, b.name) }
	if !slices.IsSortedFunc(t.entries, cmp) {
		slices.SortStableFunc(t.entries, cmp)
	}
	// A malformed tree may repeat a name; serve the first only.
	t.entries = slices.CompactFunc(t.entries, func(a, b entry) bool {
		if a.name == b.name {
			bad = append(bad, badEntry{b.name, "duplicate name"})
			return true
		}
		return false
	})
	for i := range t.entries {
		if t.entries[i].kind.isDir() {
			t.subdirs++
		}
	}
	t.cost += treeOverhead
	return t, bad, nil
}

// entryOverhead and treeOverhead approximate the memory of a decoded entry
// (beyond its name) and tree, for the cache bound.
const (
	entryOverhead = 64
	treeOverhead  = 64
)

// validName reports whether a tree entry name can be served: one path
// component that mounts.CheckPath accepts and that is not ".git".
func validName(name string) bool {
	if name == "." || name == ".." || name == ".git" || strings.Contains(name, "/") {
		return false
	}
	return mounts.CheckPath("lookup", name) == nil
}

// treeCache holds decoded trees by object id, bounded by their cost, the
// least recently used evicted first. Two goroutines missing the same tree
// share one inflate of it (the object store's Bytes collapses them) and
// each parse it; the second insert is dropped. So only a miss goes through
// a flight, never a lookup that hits.
type treeCache struct {
	mu  sync.Mutex
	lru *lru.LRU[plumbing.Hash, *tree]
}

// newTreeCache returns a cache of trees costing max in all; it keeps the
// newest tree even when that one alone is over the bound.
func newTreeCache(max int64) *treeCache {
	return &treeCache{lru: lru.New[plumbing.Hash](max, func(t *tree) int64 { return t.cost }, nil)}
}

// get returns tree h, or nil.
func (c *treeCache) get(h plumbing.Hash) *tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, _ := c.lru.Get(h)
	return t
}

// put adds t as tree h and returns the tree the cache holds for h: t, or
// the one another lookup put first.
func (c *treeCache) put(h plumbing.Hash, t *tree) *tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, _ = c.lru.Add(h, t)
	return t
}
