package union

import (
	"context"
	"io/fs"
	"regexp/syntax"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

var _ mounts.SearchFS = (*Union)(nil)

// Candidates splits a search's candidates (mounts.SearchFS) by mount: the
// mount serving dir, asked below dir, and every mount whose mount point is
// below dir, asked for all of it. The names are the union's, in walk
// order, without those of a mount that a mount point below it hides. If
// any of those mounts cannot narrow the search, the union cannot either:
// the search scans them all.
func (u *Union) Candidates(ctx context.Context, dir string, re *syntax.Regexp) ([]string, bool, error) {
	if err := mounts.CheckPath("search", dir); err != nil {
		return nil, false, err
	}
	t := u.locate(dir)
	if t.kind == missing {
		return nil, false, fail("search", dir, fs.ErrNotExist)
	}
	var out []string
	ask := func(m *mount, rel string) (bool, error) {
		names, complete, err := mounts.Candidates(ctx, m.fsys, rel, re)
		if err != nil {
			return false, m.rewrite("search", mounts.Join(m.name, rel), err)
		}
		if !complete {
			return false, nil
		}
		for _, n := range names {
			full := n
			if m.name != "." {
				full = mounts.Join(m.name, n)
			}
			if len(u.children) > 0 {
				if owner := u.locate(full); owner.kind != inMount || owner.m != m {
					continue // below a mount point of another mount
				}
			}
			out = append(out, full)
		}
		return true, nil
	}
	if t.kind == inMount {
		if ok, err := ask(t.m, t.rel); !ok || err != nil {
			return nil, false, err
		}
	}
	for _, m := range u.mounts {
		if m == t.m || !below(m.name, dir) {
			continue
		}
		if ok, err := ask(m, "."); !ok || err != nil {
			return nil, false, err
		}
	}
	slices.SortFunc(out, mounts.CompareWalk)
	return out, true, nil
}

// below reports whether name is strictly below the directory dir.
func below(name, dir string) bool {
	if dir == "." {
		return name != "."
	}
	return len(name) > len(dir) && name[len(dir)] == '/' && name[:len(dir)] == dir
}
