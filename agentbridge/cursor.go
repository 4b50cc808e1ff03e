package agentbridge

import (
	"context"
	"sort"
	"time"
)

// The Cursor SDK's tools (dialect_cursor.go), as its local executors run
// them.

// cursorLsBudget is the Cursor SDK's ls budget: characters of names.
const cursorLsBudget = 2500

// cursorLs is the SDK's ls: the whole tree below the directory while the
// names fit in the budget, then counts. With depth it is the canonical
// listing of that many levels.
func (w *Workspace) cursorLs(ctx context.Context, a *args) (string, error) {
	if a.present("depth") {
		return w.lsTree(ctx, a, 1, 0)
	}
	return w.lsTree(ctx, a, 0, cursorLsBudget)
}

// cursorGrep is the SDK's grep: content unless outputMode says otherwise,
// the files ordered by sort (modified, newest first, unless
// sortAscending), as its ripgrep call does with --sortr modified.
func (w *Workspace) cursorGrep(ctx context.Context, a *args) (string, error) {
	by, err := a.str("sort", false)
	if err != nil {
		return "", err
	}
	switch by {
	case "", "modified", "path", "none":
	default:
		return "", a.errf("argument %q must be modified, path or none, got %q (this workspace keeps no access or creation times to sort by)", a.key("sort"), by)
	}
	asc, err := a.boolean("sortAscending", false)
	if err != nil {
		return "", err
	}
	g, err := w.grepSearch(ctx, a, "content")
	if err != nil {
		return "", err
	}
	switch by {
	case "", "modified":
		mtimes := make(map[string]time.Time, len(g.hits))
		for _, h := range g.hits {
			if at, err := w.fsys.Stat(ctx, h.name); err == nil {
				mtimes[h.name] = at.Mtime
			}
		}
		sort.SliceStable(g.hits, func(i, j int) bool {
			mi, mj := mtimes[g.hits[i].name], mtimes[g.hits[j].name]
			if mi.Equal(mj) {
				return g.hits[i].shown < g.hits[j].shown
			}
			return mi.Before(mj) == asc
		})
	case "path":
		if !asc {
			sort.SliceStable(g.hits, func(i, j int) bool { return g.hits[i].shown > g.hits[j].shown })
		}
	}
	return grepText(a, g)
}

// cursorWrite is write, with the SDK's returnFileContentAfterWrite.
func (w *Workspace) cursorWrite(ctx context.Context, a *args) (string, error) {
	back, err := a.boolean("returnFileContentAfterWrite", false)
	if err != nil {
		return "", err
	}
	text, err := w.write(ctx, a)
	if err != nil || !back || w.dryRun {
		return text, err
	}
	content, err := a.str("fileText", true)
	if err != nil {
		return "", err
	}
	return text + "\n" + content, nil
}
