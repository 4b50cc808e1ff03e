package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/vfsmount/vfsmount/mounts"
)

// Limits of TOOLS.md.
const (
	globDefaultCap = 1000
	lsDefaultCap   = 1000
)

func (w *Workspace) ls(ctx context.Context, a *args) (string, error) {
	p, err := a.path("ls", "path", true, "/")
	if err != nil {
		return "", err
	}
	ignore, err := a.strs("ignore")
	if err != nil {
		return "", err
	}
	for _, g := range ignore {
		if !doublestar.ValidatePattern(g) {
			return "", a.errf("argument %q: invalid glob %q", a.key("ignore"), g)
		}
	}
	depth, err := a.integer("depth", 1, 1, 16)
	if err != nil {
		return "", err
	}
	offset, err := a.integer("offset", 1, 1, maxInt)
	if err != nil {
		return "", err
	}
	limit, err := a.integer("limit", lsDefaultCap, 1, maxInt)
	if err != nil {
		return "", err
	}
	real, attr, _, err := w.resolve(ctx, p.name, true, false)
	if err != nil {
		return "", w.explain(ctx, "ls", p, err)
	}
	if !attr.IsDir() {
		_, base := mounts.Split(real)
		return w.lsLine(ctx, real, base, attr.Mode.Type()) + "\n", nil
	}
	var lines []string
	// ls shows everything, .git included, and a subdirectory it cannot
	// list is an error, not a silent gap in the listing.
	err = w.walk(ctx, real, walkOpts{depth: depth, withGit: true, strict: true}, func(name, rel string, e mounts.DirEntry) error {
		if ignored(ignore, e.Name, rel) {
			return fs.SkipDir
		}
		lines = append(lines, w.lsLine(ctx, name, rel, e.Type))
		return nil
	})
	if err != nil {
		return "", w.explain(ctx, "ls", p, err)
	}
	if len(lines) == 0 {
		return fmt.Sprintf("(%s is empty)", p.abs()), nil
	}
	if offset > len(lines) {
		return "", fmt.Errorf("ls %s: offset %d is past the last entry (%d entries)", p.abs(), offset, len(lines))
	}
	lines = lines[offset-1:]
	var more int
	if len(lines) > limit {
		more = len(lines) - limit
		lines = lines[:limit]
	}
	out := strings.Join(lines, "\n") + "\n"
	if more > 0 {
		out += fmt.Sprintf("… %d more entries; call ls with offset=%d\n", more, offset+limit)
	}
	return out, nil
}

func ignored(globs []string, base, rel string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, base); ok {
			return true
		}
		if ok, _ := doublestar.Match(g, rel); ok {
			return true
		}
	}
	return false
}

// lsLine renders one entry: directories end in "/", symlinks show their
// target, mount points their mount, special files their type (and a
// device its numbers), so none passes for a regular file.
func (w *Workspace) lsLine(ctx context.Context, name, shown string, typ fs.FileMode) string {
	switch {
	case mounts.IsDevice(typ):
		kind := kindOf(typ)
		if a, err := w.fsys.Stat(ctx, name); err == nil {
			major, minor := mounts.DevNumbers(a.Rdev)
			kind += fmt.Sprintf(" %d:%d", major, minor)
		}
		return shown + "  [" + kind + "]"
	case mounts.IsSpecial(typ):
		return shown + "  [" + kindOf(typ) + "]"
	case typ&fs.ModeSymlink != 0:
		target, err := w.fsys.ReadLink(ctx, name)
		if err != nil {
			return shown + " -> ?"
		}
		return shown + " -> " + target
	case typ.IsDir():
		shown += "/"
		if m, ok := w.mountAt(name); ok {
			shown += fmt.Sprintf("  [%s, %s]", m.Source, rw(m.Writable))
		}
	}
	return shown
}

type globHit struct {
	path  string
	mtime time.Time
}

func (w *Workspace) glob(ctx context.Context, a *args) (string, error) {
	pattern, err := a.str("pattern", true)
	if err != nil {
		return "", err
	}
	p, err := a.path("glob", "path", false, "/")
	if err != nil {
		return "", err
	}
	limit, err := a.integer("limit", globDefaultCap, 1, maxInt)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(pattern, "/") {
		// An absolute pattern names its own base.
		p = wpath{given: "/", name: "."}
		pattern = strings.TrimLeft(pattern, "/")
	}
	if !doublestar.ValidatePattern(pattern) {
		return "", a.errf("argument %q: invalid glob pattern %q", a.key("pattern"), pattern)
	}
	base, rest := doublestar.SplitPattern(pattern)
	start := p.name
	if base != "." && base != "" {
		start = clean(p.name, base)
	}
	real, attr, _, err := w.resolve(ctx, start, true, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && start != p.name {
			return fmt.Sprintf("No files match %s under %s", pattern, p.abs()), nil
		}
		return "", w.explain(ctx, "glob", p, err)
	}
	if !attr.IsDir() {
		return "", fmt.Errorf("glob %s: not a directory; pass a directory as path", mounts.PathOf(start))
	}
	var hits []globHit
	err = w.walk(ctx, real, walkOpts{}, func(name, rel string, e mounts.DirEntry) error {
		if e.Type.IsDir() || mounts.IsSpecial(e.Type) {
			// Files and symlinks match; FIFOs, sockets and devices
			// are no source a pattern looks for.
			return nil
		}
		if ok, _ := doublestar.Match(rest, rel); !ok {
			return nil
		}
		h := globHit{path: mounts.PathOf(mounts.Join(start, rel))}
		if at, err := w.fsys.Stat(ctx, name); err == nil {
			h.mtime = at.Mtime
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return "", w.explain(ctx, "glob", p, err)
	}
	if len(hits) == 0 {
		return fmt.Sprintf("No files match %s under %s", pattern, p.abs()), nil
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mtime.Equal(hits[j].mtime) {
			return hits[i].mtime.After(hits[j].mtime)
		}
		return hits[i].path < hits[j].path
	})
	var out strings.Builder
	for i, h := range hits {
		if i == limit {
			fmt.Fprintf(&out, "… %d more matches; narrow the pattern or the path\n", len(hits)-limit)
			break
		}
		out.WriteString(h.path)
		out.WriteByte('\n')
	}
	return out.String(), nil
}
