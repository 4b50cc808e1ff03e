package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
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
	return w.lsTree(ctx, a, 1, 0)
}

// lsTree lists a directory to depth levels (0: all) in walk order. With a
// budget, file names are listed while their lengths (and the directory's
// path) fit in it, as the Cursor SDK's ls builds its directoryTreeRoot;
// past it each directory says how many files it holds that are not
// listed, by extension.
func (w *Workspace) lsTree(ctx context.Context, a *args, defDepth, budget int) (string, error) {
	p, err := a.path(a.tool, "path", true, "/")
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
	depth, err := a.integer("depth", defDepth, 1, 64)
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
		return "", w.explain(ctx, a.tool, p, err)
	}
	if !attr.IsDir() {
		_, base := mounts.Split(real)
		return w.lsLine(ctx, real, base, attr.Mode.Type()) + "\n", nil
	}
	var lines []string
	used := len(p.abs())
	over := false
	dirLine := map[string]int{}           // rel of a listed directory -> its line
	hidden := map[string]map[string]int{} // rel of a directory -> extension -> files not listed
	// ls shows everything, .git included, and a subdirectory it cannot
	// list is an error, not a silent gap in the listing.
	opts := walkOpts{depth: depth, withGit: true, strict: true}
	var unlisted []string // dirLine keys of directories the tree could not enter
	unlistedWhy := map[string]string{}
	if budget > 0 {
		// A tree of everything below must not fail for one directory
		// it cannot enter: that directory's line says why.
		opts.unlisted = func(rel string, err error) {
			unlisted = append(unlisted, rel)
			unlistedWhy[rel] = whyUnlisted(err)
		}
	}
	err = w.walk(ctx, real, opts, func(name, rel string, e mounts.DirEntry) error {
		if ignored(ignore, e.Name, rel) {
			return fs.SkipDir
		}
		if budget > 0 && !e.Type.IsDir() {
			if over || used+len(e.Name) > budget {
				over = true
				dir, _ := mounts.Split(rel)
				if hidden[dir] == nil {
					hidden[dir] = map[string]int{}
				}
				hidden[dir][path.Ext(e.Name)]++
				return nil
			}
			used += len(e.Name)
		}
		if e.Type.IsDir() {
			dirLine[rel] = len(lines)
		}
		lines = append(lines, w.lsLine(ctx, name, rel, e.Type))
		return nil
	})
	if err != nil {
		return "", w.explain(ctx, a.tool, p, err)
	}
	for _, dir := range unlisted {
		if i, ok := dirLine[dir]; ok {
			lines[i] += "  (not listed: " + unlistedWhy[dir] + ")"
		}
	}
	var rootNote string
	for dir, exts := range hidden {
		note := notListed(exts)
		if i, ok := dirLine[dir]; ok {
			lines[i] += "  (" + note + ")"
		} else {
			rootNote = "(" + note + " directly in " + p.abs() + ")"
		}
	}
	if over {
		lines = append(lines, fmt.Sprintf("(the listing stops at %d characters of names; list a subdirectory to see the rest)", budget))
		if rootNote != "" {
			lines = append(lines, rootNote)
		}
	}
	if len(lines) == 0 {
		return fmt.Sprintf("(%s is empty)", p.abs()), nil
	}
	if offset > len(lines) {
		return "", fmt.Errorf("%s %s: offset %d is past the last entry (%d entries)", a.tool, p.abs(), offset, len(lines))
	}
	lines = lines[offset-1:]
	var more int
	if len(lines) > limit {
		more = len(lines) - limit
		lines = lines[:limit]
	}
	out := strings.Join(lines, "\n") + "\n"
	if more > 0 {
		out += fmt.Sprintf("… %d more entries; %s\n", more, callWith(a, VerbLs, "offset", offset+limit, "narrow the path or the ignore globs"))
	}
	return out, nil
}

// whyUnlisted is why a directory could not be listed, in a few words.
func whyUnlisted(err error) string {
	switch {
	case errors.Is(err, mounts.ErrDenied):
		return "denied by policy"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, fs.ErrNotExist):
		return "it vanished"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// notListed says how many files a directory holds that a budgeted ls did
// not list, by extension, most common first.
func notListed(exts map[string]int) string {
	type ec struct {
		ext string
		n   int
	}
	var list []ec
	total := 0
	for e, n := range exts {
		list = append(list, ec{e, n})
		total += n
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].ext < list[j].ext
	})
	parts := make([]string, len(list))
	for i, x := range list {
		name := x.ext
		if name == "" {
			name = "no extension"
		}
		parts[i] = fmt.Sprintf("%d %s", x.n, name)
	}
	return fmt.Sprintf("%d more %s not listed: %s", total, plural(total, "file", "files"), strings.Join(parts, ", "))
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

// globRun is one glob done: its hits newest first (ties by path).
type globRun struct {
	pattern string
	base    wpath
	hits    []globHit
}

func (w *Workspace) globSearch(ctx context.Context, a *args) (*globRun, error) {
	pattern, err := a.str("pattern", true)
	if err != nil {
		return nil, err
	}
	p, err := a.path(a.tool, "path", false, "/")
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(pattern, "/") {
		// An absolute pattern names its own base.
		p = wpath{given: "/", name: "."}
		pattern = strings.TrimLeft(pattern, "/")
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, a.errf("argument %q: invalid glob pattern %q", a.key("pattern"), pattern)
	}
	base, rest := doublestar.SplitPattern(pattern)
	start := p.name
	if base != "." && base != "" {
		start = clean(p.name, base)
	}
	real, attr, _, err := w.resolve(ctx, start, true, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && start != p.name {
			return &globRun{pattern: pattern, base: p}, nil
		}
		return nil, w.explain(ctx, a.tool, p, err)
	}
	if !attr.IsDir() {
		return nil, fmt.Errorf("%s %s: not a directory; pass a directory as path", a.tool, mounts.PathOf(start))
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
		return nil, w.explain(ctx, a.tool, p, err)
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mtime.Equal(hits[j].mtime) {
			return hits[i].mtime.After(hits[j].mtime)
		}
		return hits[i].path < hits[j].path
	})
	return &globRun{pattern: pattern, base: p, hits: hits}, nil
}

func (w *Workspace) glob(ctx context.Context, a *args) (string, error) {
	g, err := w.globSearch(ctx, a)
	if err != nil {
		return "", err
	}
	limit, err := a.integer("limit", globDefaultCap, 1, maxInt)
	if err != nil {
		return "", err
	}
	hits := g.hits
	if len(hits) == 0 {
		return fmt.Sprintf("No files match %s under %s", g.pattern, g.base.abs()), nil
	}
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
