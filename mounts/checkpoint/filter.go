package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// Checkpoints under path rules
//
// A checkpoint reads and writes the mounts' trees themselves, below the
// decorators that bind the faces. Whoever the path rules bind (the agent's
// tools) is given the filtered operations: [Workspace.DiffFiltered] does
// not show the content of a name the rules deny reading, and
// [Workspace.RestoreFiltered] does not change a name they deny changing.
// The package knows no rules: a [Filter] is asked about each workspace
// path, and its error is the reason given.

// Filter decides about one workspace path ("/memory/notes.md"): nil lets
// the operation have it; an error refuses it, and its text is the reason
// shown (policy.RuleSet.CanRead and CanWrite are filters).
type Filter func(path string, isDir bool) error

// Withheld is a changed name a filtered diff does not show.
type Withheld struct {
	// Path is the workspace path.
	Path string `json:"path"`
	// Reason is why (the filter's error).
	Reason string `json:"reason"`
}

// Refused is a name a filtered restore did not change back.
type Refused struct {
	// Path is the workspace path.
	Path string `json:"path"`
	// Reason is why: the filter's error, for the name or one below it.
	Reason string `json:"reason"`
	// Err is that error, for a caller that tells refusals apart
	// (errors.Is: a denial, a read-only name).
	Err error `json:"-"`
}

// reasonOf is the text of a filter's error without the name it repeats.
func reasonOf(err error) string {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// Restore filtering
//
// A restore changes the names that changed since the checkpoint, as the
// tree's operations named them ([memfs.FS.ChangedSince]). RestoreFiltered
// asks the filter about each of them that differs from the checkpoint
// (type, mode, size, modification time, link target; a directory by what
// it holds) and about every name below a directory among them, on either
// side: a directory whose restore would change a refused name below it is
// refused whole, naming that name. When nothing is refused the restore is
// the unfiltered one; otherwise the names let through are restored as by
// a restore of paths (git checkout ID -- NAME...), all at once, and the
// refused ones are left as they are.

// plan sorts the names a restore of m to checkpoint id would change within
// sel (the mount's names; nil is the whole mount) into those the filter
// lets through and those it refuses. Without a refusal it returns sel
// itself. The caller holds w.mu, not m.
func (w *Workspace) plan(ctx context.Context, m *Mount, id string, sel []string, refuse Filter) (pass []string, refused []Refused, _ error) {
	then, err := w.viewLocked(ctx, id, m)
	if err != nil {
		return nil, nil, err
	}
	var now mounts.FS = m.Tree
	changed, err := m.Tree.ChangedSince(id)
	if err != nil {
		return nil, nil, err
	}
	var cands []string
	for _, n := range changed {
		if n == "." {
			continue // the root's own attributes: not a name to refuse
		}
		cands = append(cands, n)
	}
	cands = within(cands, sel)
	for _, n := range cands {
		// A name below one let through whole is restored with it.
		if slices.ContainsFunc(pass, func(p string) bool { return under(n, p) }) {
			continue
		}
		if same(ctx, then, now, n) {
			continue
		}
		p := path.Join(m.Prefix, n)
		isDir := isDirIn(ctx, then, n) || isDirIn(ctx, now, n)
		if err := refuse(p, isDir); err != nil {
			refused = append(refused, Refused{Path: p, Reason: reasonOf(err), Err: err})
			continue
		}
		if isDir {
			if below, err := refusedBelow(ctx, m.Prefix, n, refuse, then, now); below != "" {
				refused = append(refused, Refused{Path: p, Reason: fmt.Sprintf("it holds %s: %s", below, reasonOf(err)), Err: err})
				continue
			}
		}
		pass = append(pass, n)
	}
	if len(refused) == 0 {
		return sel, nil, nil
	}
	if pass == nil {
		pass = []string{}
	}
	return pass, refused, nil
}

// within keeps the names of cands that a restore of sel covers: those at
// or below a name of sel, and a name of sel below a changed name (a
// directory renamed away: restoring the name brings it back). nil sel is
// the whole mount. The result is sorted, parents first.
func within(cands, sel []string) []string {
	if sel == nil {
		return slices.Sorted(slices.Values(cands))
	}
	set := map[string]bool{}
	for _, s := range sel {
		for _, c := range cands {
			switch {
			case s == "." || under(c, s):
				set[c] = true
			case under(s, c):
				set[s] = true
			}
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// under reports whether name is dir or below it.
func under(name, dir string) bool {
	return dir == "." || name == dir || strings.HasPrefix(name, dir+"/")
}

func isDirIn(ctx context.Context, fsys mounts.FS, name string) bool {
	a, err := fsys.Stat(ctx, name)
	return err == nil && a.IsDir()
}

// same reports whether name is the same in a and b: absent from both, or
// of the same type, mode, size and modification time (a symlink to the
// same target; a directory holding the same names, each the same).
func same(ctx context.Context, a, b mounts.FS, name string) bool {
	x, errA := a.Stat(ctx, name)
	y, errB := b.Stat(ctx, name)
	switch {
	case errA != nil || errB != nil:
		return errors.Is(errA, fs.ErrNotExist) && errors.Is(errB, fs.ErrNotExist)
	case x.Mode != y.Mode:
		return false
	case x.Mode.IsDir():
		ea, errA := a.ReadDir(ctx, name)
		eb, errB := b.ReadDir(ctx, name)
		if errA != nil || errB != nil || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if ea[i].Name != eb[i].Name || !same(ctx, a, b, mounts.Join(name, ea[i].Name)) {
				return false
			}
		}
		return true
	case x.Mode&fs.ModeSymlink != 0:
		ta, errA := a.ReadLink(ctx, name)
		tb, errB := b.ReadLink(ctx, name)
		return errA == nil && errB == nil && ta == tb
	}
	return x.Size == y.Size && x.Mtime.Equal(y.Mtime)
}

// refusedBelow returns the first workspace path below the directory name
// (in any of trees) that refuse refuses, with its error; "" when none is.
func refusedBelow(ctx context.Context, prefix, name string, refuse Filter, trees ...mounts.FS) (string, error) {
	for _, t := range trees {
		ents, err := t.ReadDir(ctx, name)
		if err != nil {
			continue // not there, or not a directory, in this one
		}
		for _, e := range ents {
			child := mounts.Join(name, e.Name)
			p := path.Join(prefix, child)
			if err := refuse(p, e.Type.IsDir()); err != nil {
				return p, err
			}
			if e.Type.IsDir() {
				if p, err := refusedBelow(ctx, prefix, child, refuse, t); p != "" {
					return p, err
				}
			}
		}
	}
	return "", nil
}
