package overlayfs

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// ent is a name resolved in the merged view.
type ent struct {
	name string // in the overlay
	// upper: the upper holds the entry (not a whiteout) at up(name); ua
	// and um are its attributes and bookkeeping.
	upper bool
	ua    mounts.Attr
	um    meta
	// For an entry only the lower holds, lower is its lower name and la
	// its attributes. For an upper directory, hasLower says it merges the
	// lower directory lower (attributes la).
	lower    string
	hasLower bool
	la       mounts.Attr
}

func (e *ent) mode() fs.FileMode {
	if e.upper {
		return e.ua.Mode
	}
	return e.la.Mode
}

func (e *ent) isDir() bool { return e.mode().IsDir() }

// newBit marks the inode numbers of entries the lower never had: the upper's
// own number with bit 55 set, so that they never meet a lower whose numbers
// stay below 2^55 (see "# Inode numbers" in the package doc).
const newBit = 1 << 55

func newIno(upperIno uint64) uint64 { return newBit | upperIno&(newBit-1) }

// inoOf is the overlay's number of an upper entry: the one it had before it
// was copied up, or one of its own.
func inoOf(ua mounts.Attr, m meta) uint64 {
	if m.hasOrigin && m.origin != 0 {
		return m.origin
	}
	return newIno(ua.Ino)
}

// lowerAbsent reports whether a lower's error means it has no such entry:
// missing, or a name it cannot hold at all (a git mount refuses ".git"),
// which the overlay can.
func lowerAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid)
}

// resolve finds a checked name in the merged view. It walks the upper from
// the root for as long as the name's directories exist there, reading their
// bookkeeping (whiteouts, opaque directories, redirects), and asks the lower
// once for the rest: an untouched subtree costs one upper lookup that
// misses and the lower's own lookup. Errors are bare sentinels, for the
// caller to wrap with its own names.
func (f *FS) resolve(ctx context.Context, name string) (*ent, error) {
	// The root's bookkeeping never changes (it cannot be removed, renamed
	// or made opaque); its attributes are needed only when it is the
	// answer.
	cur := &ent{name: ".", upper: true, um: f.rootMeta, lower: ".", hasLower: true}
	rest := name
	if name == "." {
		rest = ""
		ua, err := f.upper.Stat(ctx, treeDir)
		if err != nil {
			return nil, cause(err)
		}
		cur.ua = ua
	}
	for rest != "" {
		elem, tail, _ := strings.Cut(rest, "/")
		child := mounts.Join(cur.name, elem)
		a, m, err := f.statMeta(ctx, up(child))
		if isNotExist(err) {
			break
		}
		if err != nil {
			return nil, cause(err)
		}
		if m.whiteout {
			return nil, fs.ErrNotExist
		}
		if !a.IsDir() {
			if tail != "" {
				return nil, mounts.ErrNotDir
			}
			return &ent{name: child, upper: true, ua: a, um: m}, nil
		}
		next := &ent{name: child, upper: true, ua: a, um: m}
		switch {
		case m.opaque:
		case m.hasRedirect:
			next.lower, next.hasLower = m.redirect, true
		case cur.hasLower:
			next.lower, next.hasLower = mounts.Join(cur.lower, elem), true
		}
		cur, rest = next, tail
	}
	if rest == "" {
		// An upper directory: it merges its lower only if that is a
		// directory (a directory made over a lower file never does).
		if cur.hasLower {
			la, err := f.lower.Stat(ctx, cur.lower)
			switch {
			case err == nil && la.IsDir():
				cur.la = la
			case err == nil || lowerAbsent(err) || errors.Is(err, mounts.ErrNotDir):
				cur.hasLower = false
			default:
				return nil, cause(err)
			}
		}
		return cur, nil
	}
	if !cur.hasLower {
		return nil, fs.ErrNotExist
	}
	lname := mounts.Join(cur.lower, rest)
	la, err := f.lower.Stat(ctx, lname)
	if err != nil {
		if errors.Is(err, mounts.ErrNotDir) {
			// Below an upper directory whose lower is no directory
			// the lower has nothing; a lower file further down is
			// what the caller ran into.
			if da, derr := f.lower.Stat(ctx, cur.lower); derr != nil || !da.IsDir() {
				return nil, fs.ErrNotExist
			}
			return nil, mounts.ErrNotDir
		}
		if lowerAbsent(err) {
			return nil, fs.ErrNotExist
		}
		return nil, cause(err)
	}
	return &ent{name: name, lower: lname, hasLower: true, la: la}, nil
}

// parentOf resolves the directory holding a checked name other than ".".
func (f *FS) parentOf(ctx context.Context, name string) (*ent, string, error) {
	dir, base := mounts.Split(name)
	p, err := f.resolve(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	if !p.isDir() {
		return nil, "", mounts.ErrNotDir
	}
	return p, base, nil
}

// lowerHas reports whether the lower directory that dir merges has an entry
// base: the one a whiteout must hide once the upper lets go of the name.
func (f *FS) lowerHas(ctx context.Context, dir *ent, base string) (bool, error) {
	if !dir.hasLower {
		return false, nil
	}
	_, err := f.lower.Stat(ctx, mounts.Join(dir.lower, base))
	switch {
	case err == nil:
		return true, nil
	case lowerAbsent(err) || errors.Is(err, mounts.ErrNotDir):
		return false, nil
	}
	return false, cause(err)
}

// attr is what Stat reports of e: the layer's attributes, with the overlay's
// inode number, and for a merged directory the link count of the merged
// listing.
func (f *FS) attr(ctx context.Context, e *ent) (mounts.Attr, error) {
	if !e.upper {
		return e.la, nil
	}
	a := e.ua
	a.Ino = inoOf(e.ua, e.um)
	if a.IsDir() && e.hasLower {
		n, err := f.subdirs(ctx, e)
		if err != nil {
			return mounts.Attr{}, err
		}
		a.Nlink = 2 + n
	}
	return a, nil
}

// subdirs counts the directories of the merged listing of directory e (an
// upper one with a lower below), as list would list them, without what
// list needs for the rest: a whiteout is always a file (makeWhiteout), so
// the upper's directories are all there, and the lower's are unless an
// upper entry of the same name hides them (or is that directory, counted
// with the upper's). A stat of a merged directory, which the kernel asks
// for after every entry the directory gains or loses, then reads no
// entry's bookkeeping, and the lower's listing only once when the lower
// never changes.
//
// The upper's own directories are counted from its link count where it
// keeps POSIX ones (the memory upper, ext4, tmpfs: 2 plus its
// subdirectories), and a few lower directories are then looked up one by
// one: a stat in a directory of n files costs a few lookups, not a
// listing of n entries. An upper that reports another count (btrfs gives
// a directory 1), or many lower directories, take the listing.
func (f *FS) subdirs(ctx context.Context, e *ent) (uint32, error) {
	ldirs, err := f.lowerSubdirs(ctx, e.lower)
	if err != nil {
		return 0, err
	}
	if e.ua.Nlink >= 2 && len(ldirs) <= subdirLookups {
		n := e.ua.Nlink - 2
		for _, name := range ldirs {
			_, err := f.upper.Stat(ctx, up(mounts.Join(e.name, name)))
			switch {
			case isNotExist(err):
				n++
			case err != nil:
				return 0, cause(err)
			}
		}
		return n, nil
	}
	uents, err := f.upper.ReadDir(ctx, up(e.name))
	if err != nil {
		return 0, cause(err)
	}
	var n uint32
	hidden := make(map[string]struct{}, len(uents))
	for _, ue := range uents {
		if ue.Type.IsDir() {
			n++
		}
		hidden[ue.Name] = struct{}{}
	}
	for _, name := range ldirs {
		if _, ok := hidden[name]; !ok {
			n++
		}
	}
	return n, nil
}

// subdirLookups is the most lower directories subdirs looks up one by one
// in the upper rather than list it.
const subdirLookups = 64

// lowerSubdirs returns the names of the directories in lower directory
// dir: listed once and kept when the lower never changes (a commit).
func (f *FS) lowerSubdirs(ctx context.Context, dir string) ([]string, error) {
	if f.lowerFixed {
		if v, ok := f.lowerDirs.Load(dir); ok {
			return v.([]string), nil
		}
	}
	lents, err := f.lower.ReadDir(ctx, dir)
	if err != nil {
		return nil, cause(err)
	}
	names := []string{}
	for _, le := range lents {
		if le.Type.IsDir() {
			names = append(names, le.Name)
		}
	}
	if f.lowerFixed {
		f.lowerDirs.Store(dir, names)
	}
	return names, nil
}

// list is the merged listing of directory e, sorted: the upper's entries
// less its whiteouts, and the lower's that no upper entry hides.
func (f *FS) list(ctx context.Context, e *ent) ([]mounts.DirEntry, error) {
	if !e.upper {
		ents, err := f.lower.ReadDir(ctx, e.lower)
		return ents, cause(err)
	}
	uents, err := f.upper.ReadDir(ctx, up(e.name))
	if err != nil {
		return nil, cause(err)
	}
	out := make([]mounts.DirEntry, 0, len(uents))
	hidden := make(map[string]bool, len(uents))
	for _, ue := range uents {
		hidden[ue.Name] = true
		p := up(mounts.Join(e.name, ue.Name))
		a := mounts.Attr{Mode: ue.Type, Ino: ue.Ino}
		if !takesXattrs(ue.Type) || a.Ino == 0 {
			// A symlink's or special file's record is found by its
			// inode number and checked against its attributes.
			if a, err = f.upper.Stat(ctx, p); err != nil {
				if isNotExist(err) {
					continue
				}
				return nil, cause(err)
			}
		}
		m, err := f.readMeta(ctx, p, a)
		if err != nil {
			return nil, cause(err)
		}
		if m.whiteout {
			continue
		}
		out = append(out, mounts.DirEntry{Name: ue.Name, Type: ue.Type, Ino: inoOf(a, m)})
	}
	if e.hasLower {
		lents, err := f.lower.ReadDir(ctx, e.lower)
		if err != nil {
			return nil, cause(err)
		}
		for _, le := range lents {
			if !hidden[le.Name] {
				out = append(out, le)
			}
		}
		slices.SortFunc(out, func(a, b mounts.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	}
	return out, nil
}
