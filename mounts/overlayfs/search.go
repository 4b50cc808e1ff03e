package overlayfs

import (
	"context"
	"errors"
	"io/fs"
	"regexp/syntax"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

var _ mounts.SearchFS = (*FS)(nil)

// Candidates names the files below dir that may match re
// (mounts.SearchFS): the lower's candidates (an index of a git commit),
// less the names the upper deleted or replaced, plus every regular file
// the upper added or changed below dir, which the search reads as it
// would without an index. Its cost is the lower's answer and Changes,
// whose cost is in the number of changes. With a rename among the
// changes (lower names moved wholesale) it does not narrow, and neither
// does it when the lower cannot.
func (f *FS) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if !f.caps.Has(mounts.CapSearch) {
		return nil, false, nil
	}
	a, err := f.Stat(ctx, dir)
	switch {
	case err != nil:
		return nil, false, err
	case !a.IsDir():
		return nil, false, mounts.PathErr("search", dir, mounts.ErrNotDir)
	}
	changes, err := f.Changes(ctx)
	if err != nil {
		return nil, false, nil // the search scans and meets the error itself
	}
	// gone holds the names whose lower entry is not what the overlay
	// shows; hidden the directories whose lower contents are gone.
	gone := map[string]bool{}
	hidden := map[string]bool{}
	var out []string
	for _, c := range changes {
		if c.From != "" {
			return nil, false, nil
		}
		gone[c.Path] = true
		if c.Kind == Deleted || c.Opaque || (c.LowerMode.IsDir() && !c.Mode.IsDir()) {
			hidden[c.Path] = true
		}
		if c.Kind != Deleted && c.Mode.IsRegular() && within(c.Path, dir) {
			out = append(out, c.Path)
		}
	}
	lower, complete, err := mounts.Candidates(ctx, f.lower, dir, re)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, mounts.ErrNotDir):
		lower, complete = nil, true // a directory the upper made: nothing below from the lower
	case err != nil || !complete:
		return nil, false, nil
	}
	for _, n := range lower {
		if !gone[n] && !below(n, hidden) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, mounts.CompareWalk)
	return slices.Compact(out), true, nil
}

// below reports whether an ancestor of name is in dirs.
func below(name string, dirs map[string]bool) bool {
	if len(dirs) == 0 {
		return false
	}
	for d, _ := mounts.Split(name); d != "."; d, _ = mounts.Split(d) {
		if dirs[d] {
			return true
		}
	}
	return false
}
