package agentbridge

import (
	"context"
	"errors"
	"io/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

// walkOpts are the differences between the verbs that list recursively;
// the zero value is the searches' walk (glob, grep, delete's count).
type walkOpts struct {
	// depth bounds the levels listed below the root (1: only the root's
	// entries); 0 is no bound.
	depth int
	// withGit lists .git directories and walks into them, as ls does;
	// the searches leave them out, as ripgrep does.
	withGit bool
	// strict makes a subdirectory that vanished or cannot be read fail
	// the walk, as ls does; the searches skip it, as ripgrep does. An
	// error reading the root always fails the walk.
	strict bool
	// unlisted, when set, is told of a subdirectory that cannot be
	// read (rel, why) and the walk goes on: ls's tree says so on the
	// directory's line instead of failing the whole listing.
	unlisted func(rel string, err error)
}

// walk is the one recursive listing of the tool face (ls with a depth,
// glob, grep, delete's count). It visits every entry below the directory
// root in name order, depth first, and never follows a symlink: a link
// is an entry, not a directory to enter, so a walk cannot loop or leave
// the tree it was given. fn gets the FS name and the slash path relative
// to root; returning fs.SkipDir for a directory leaves its contents out
// (for any other entry it changes nothing), any other error ends the walk.
func (w *Workspace) walk(ctx context.Context, root string, o walkOpts, fn func(name, rel string, e mounts.DirEntry) error) error {
	var visit func(dir, rel string, level int) error
	visit = func(dir, rel string, level int) error {
		if err := ctx.Err(); err != nil {
			return mounts.PathErr("walk", dir, err)
		}
		ents, err := w.fsys.ReadDir(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Type.IsDir() && e.Name == ".git" && !o.withGit {
				continue
			}
			name := mounts.Join(dir, e.Name)
			r := e.Name
			if rel != "" {
				r = rel + "/" + e.Name
			}
			err := fn(name, r, e)
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			if err != nil {
				return err
			}
			if !e.Type.IsDir() || (o.depth > 0 && level >= o.depth) {
				continue
			}
			if err := visit(name, r, level+1); err != nil {
				if o.unlisted != nil && ctx.Err() == nil {
					o.unlisted(r, err)
					continue
				}
				if !o.strict && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
					continue // vanished or unreadable below: skip, as rg does
				}
				return err
			}
		}
		return nil
	}
	return visit(root, "", 1)
}
