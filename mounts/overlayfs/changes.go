package overlayfs

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// Kind says how a name of the merged tree differs from the lower.
type Kind uint8

const (
	// Added: the lower has nothing at the name.
	Added Kind = iota + 1
	// Modified: the entry at the name replaces the lower's entry of that
	// name (a copy-up, a new entry where one was removed, or one moved
	// there). Its content, mode or type may differ from the lower's.
	Modified
	// Deleted: the lower's entry at the name is gone, and for a directory
	// everything below it.
	Deleted
)

func (k Kind) String() string {
	switch k {
	case Added:
		return "added"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

// Change is one name of the merged tree that differs from the lower.
type Change struct {
	Kind Kind
	// Path is the name in the overlay.
	Path string
	// Mode is the entry's type and permission bits now (0 when Deleted);
	// LowerMode the lower's entry at Path (0 when Added).
	Mode, LowerMode fs.FileMode
	// From is the lower name the entry came from when that is not Path:
	// it was renamed (or hard-linked) from there. For a directory it is
	// where the lower contents it still shows live: the unchanged names
	// below Path are the names below From, less those that have a Change
	// of their own.
	From string
	// Opaque is set on a directory that shows none of the lower's
	// contents at Path (it was removed and made again): every lower name
	// below Path is gone.
	Opaque bool
}

// Changes lists what differs from the lower, sorted by path. It walks only
// the upper, which holds only what changed, and asks the lower about each
// changed name once: its cost is in the number of changes, not the size of
// the tree. A directory copied up only because something below it changed
// is not a change of its own unless its type or mode differs. Names of
// Options.Private are left out. A copied-up
// file is Modified even when only its owner or times changed: comparing
// contents is the caller's business.
func (f *FS) Changes(ctx context.Context) ([]Change, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Change
	if err := f.changesIn(ctx, ".", ".", true, &out); err != nil {
		return nil, perr("changes", ".", err)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// changesIn walks the upper directory of overlay name dir, whose lower
// directory is lower when hasLower.
func (f *FS) changesIn(ctx context.Context, dir, lower string, hasLower bool, out *[]Change) error {
	ents, err := f.upper.ReadDir(ctx, up(dir))
	if err != nil {
		return err
	}
	for _, ue := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := mounts.Join(dir, ue.Name)
		if f.private(name) {
			continue
		}
		ua, err := f.upper.Stat(ctx, up(name))
		if err != nil {
			return err
		}
		m, err := f.readMeta(ctx, up(name), ua)
		if err != nil {
			return err
		}
		var la mounts.Attr
		lowerHere := false
		if hasLower {
			a, err := f.lower.Stat(ctx, mounts.Join(lower, ue.Name))
			switch {
			case err == nil:
				la, lowerHere = a, true
			case !lowerAbsent(err) && !errors.Is(err, mounts.ErrNotDir):
				return err
			}
		}
		c := Change{Path: name, Mode: ua.Mode, Kind: Added}
		if lowerHere {
			c.Kind, c.LowerMode = Modified, la.Mode
		}
		if m.hasFrom && m.from != name {
			c.From = m.from
		}
		switch {
		case m.whiteout:
			if lowerHere {
				*out = append(*out, Change{Kind: Deleted, Path: name, LowerMode: la.Mode})
			}
			continue
		case !ua.IsDir():
			*out = append(*out, c)
			continue
		}
		// A directory: which lower directory its children merge.
		childLower, childHas := "", false
		switch {
		case m.opaque:
			c.Opaque = lowerHere
		case m.hasRedirect:
			childLower, childHas = m.redirect, true
			if m.redirect != name {
				c.From = m.redirect
			} else {
				c.From = ""
			}
		case lowerHere && la.IsDir():
			childLower, childHas = mounts.Join(lower, ue.Name), true
		}
		report := true
		if childHas && c.From == "" && !m.opaque && lowerHere && la.IsDir() {
			// Copied up where it was, for its children's sake.
			report = c.Mode != la.Mode
		}
		if report {
			*out = append(*out, c)
		}
		if err := f.changesIn(ctx, name, childLower, childHas, out); err != nil {
			return err
		}
	}
	return nil
}
