package gitfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/codeindex"
)

// An ancestor's index: until a mount's own index is built, its searches
// narrow with the index of an earlier commit's tree, found in the cache
// directory, and the files that changed since are candidates whatever the
// pattern (see "Search" in the package doc). A task pinned at the next
// commit of a branch thus greps at index speed from its first search.

const (
	// maxAncestors is how far back the first-parent chain is looked at.
	maxAncestors = 32
	// minChanged is how many changed files (added or modified: every
	// search reads them) an ancestor's index is used with, whatever the
	// tree's size; beyond it, up to a quarter of the index's files.
	minChanged = 256
)

// ancestor is the index of an earlier commit's tree and what differs.
type ancestor struct {
	ix   *codeindex.Index
	tree plumbing.Hash // the tree it indexes
	// prefix is where the served tree is in the indexed one: "" for the
	// same directory, "sub/" when the index is of a directory above a
	// subdir mount's.
	prefix string
	// changed is the files of the served tree that the ancestor's does not
	// have as they are (added or modified), in walk order; stale the
	// ancestor's files the served tree does not have as they are
	// (deleted or modified), named as in the served tree.
	changed []string
	stale   map[string]bool
}

// name returns the served tree's name of the index's file id, and false
// for one outside it or stale.
func (a *ancestor) name(id uint32) (string, bool) {
	name, ok := strings.CutPrefix(a.ix.Name(id), a.prefix)
	return name, ok && !a.stale[name]
}

// findAncestor looks for an index in the cache directory to narrow with
// until the mount's own is built: that of an ancestor's tree, nearest
// first, or of a directory above the served one (a subdir mount), in
// this commit or an ancestor. It returns it with the changes since, or
// nil. It fails soft: a history or tree it cannot read is no ancestor.
func (s *searcher) findAncestor() *ancestor {
	if s.dir == "" || s.f.submoduleKey() != nil {
		// An ancestor's index has no submodule's files, nor do the
		// changes since name them.
		return nil
	}
	var parts []string
	if s.f.subdir != "" {
		parts = strings.Split(s.f.subdir, "/")
	}
	repo := s.f.obj.Repository()
	c, err := repo.CommitObject(s.f.commit)
	for depth := 0; depth <= maxAncestors && err == nil; depth++ {
		if depth > 0 || len(parts) > 0 { // the commit's own tree is s.ix
			if a, found := s.ancestorAt(c.TreeHash, parts, depth == 0); found {
				return a // nil for one too far: older ones are farther
			}
		}
		if len(c.ParentHashes) == 0 {
			return nil
		}
		c, err = repo.CommitObject(c.ParentHashes[0])
	}
	return nil
}

// ancestorAt returns the index of the directory parts below tree root,
// or of the nearest above it with one, and the changes from its files to
// the served tree's, and whether it found an index: nil with true when the
// changes are too many (or cannot be read). self is the mount's own commit,
// whose tree at parts is the mount's.
func (s *searcher) ancestorAt(root plumbing.Hash, parts []string, self bool) (*ancestor, bool) {
	served, ok := s.subtree(root, parts)
	if !ok {
		return nil, false // not there in this commit
	}
	for k := len(parts); k >= 0; k-- {
		if self && k == len(parts) {
			continue
		}
		tree, ok := s.subtree(root, parts[:k])
		if !ok {
			return nil, false
		}
		ix, err := codeindex.Open(filepath.Join(s.dir, indexFile(tree)), tree[:])
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.f.logOnce("index:"+indexFile(tree), "gitfs: search index ignored", "tree", tree.String(), "err", unwrapPath(err))
			}
			continue
		}
		a := &ancestor{ix: ix, tree: tree, stale: map[string]bool{}}
		if k < len(parts) {
			a.prefix = strings.Join(parts[k:], "/") + "/"
		}
		if err := s.diff(served, s.f.root.hash, "", a); err != nil || len(a.changed) > max(minChanged, ix.Len()/4) {
			ix.Close()
			return nil, true
		}
		return a, true
	}
	return nil, false
}

// subtree returns the hash of the directory at path (its names) below
// tree root.
func (s *searcher) subtree(root plumbing.Hash, path []string) (plumbing.Hash, bool) {
	h := root
	for _, part := range path {
		t, err := s.f.tree(h)
		if err != nil {
			return plumbing.ZeroHash, false
		}
		e := t.find(part)
		if e == nil || e.kind != kindDir {
			return plumbing.ZeroHash, false
		}
		h = e.hash
	}
	return h, true
}

// diff adds to a the files of tree hb (named below prefix) that tree ha
// does not have with the same content, as changed, and those of ha that
// hb does not, as stale. Identical subtrees are not read.
func (s *searcher) diff(ha, hb plumbing.Hash, prefix string, a *ancestor) error {
	if ha == hb {
		return nil
	}
	ta, err := s.f.tree(ha)
	if err != nil {
		return err
	}
	tb, err := s.f.tree(hb)
	if err != nil {
		return err
	}
	// Files only: what the index holds (see list).
	gone := func(e *entry) error { return s.files(e, prefix, func(name string) { a.stale[name] = true }) }
	came := func(e *entry) error {
		return s.files(e, prefix, func(name string) { a.changed = append(a.changed, name) })
	}
	i, j := 0, 0
	for i < len(ta.entries) || j < len(tb.entries) {
		var ea, eb *entry
		switch {
		case j == len(tb.entries) || i < len(ta.entries) && ta.entries[i].name < tb.entries[j].name:
			ea, i = &ta.entries[i], i+1
		case i == len(ta.entries) || tb.entries[j].name < ta.entries[i].name:
			eb, j = &tb.entries[j], j+1
		default:
			ea, eb, i, j = &ta.entries[i], &tb.entries[j], i+1, j+1
		}
		switch {
		case eb == nil:
			err = gone(ea)
		case ea == nil:
			err = came(eb)
		case ea.kind == kindDir && eb.kind == kindDir:
			err = s.diff(ea.hash, eb.hash, prefix+eb.name+"/", a)
		case ea.hash == eb.hash && isFile(ea.kind) == isFile(eb.kind):
			// The same content (a mode change is not a change to it).
		default:
			if err = gone(ea); err == nil {
				err = came(eb)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// files calls fn with the name of every regular file at or below e, in
// walk order.
func (s *searcher) files(e *entry, prefix string, fn func(string)) error {
	switch {
	case isFile(e.kind):
		fn(prefix + e.name)
	case e.kind == kindDir:
		var out []indexed
		if err := s.list(e.hash, prefix+e.name+"/", &out, nil); err != nil {
			return err
		}
		for _, f := range out {
			fn(f.name)
		}
	}
	return nil
}

func isFile(k kind) bool { return k == kindFile || k == kindExec }

// mergeWalk merges two lists of names in walk order into one.
func mergeWalk(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if walkCompare(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// walkCompare orders names as the walk (and the index) lists them: by
// name, directory by directory, which is byte order with "/" the lowest.
func walkCompare(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		switch {
		case ca == '/':
			return -1
		case cb == '/':
			return 1
		case ca < cb:
			return -1
		default:
			return 1
		}
	}
	return len(a) - len(b)
}
