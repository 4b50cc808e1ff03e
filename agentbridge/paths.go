package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// wpath is a workspace path as the caller gave it and as it resolves.
type wpath struct {
	given string // as the caller wrote it
	name  string // mount-relative name in the workspace FS ("." is /)
	rel   bool   // the caller wrote a relative path
}

// abs is the cleaned absolute workspace path, for messages.
func (p wpath) abs() string { return mounts.PathOf(p.name) }

// path decodes argument k as a workspace path (def when absent and not
// required) and converts it to a name of the workspace FS with [clean].
// Relative paths resolve against the caller's directory (TOOLS.md): the
// session's, which `cd` in a shell call moves (shell_session.go).
func (a *args) path(op, k string, required bool, def string) (wpath, error) {
	s, err := a.str(k, required)
	if err != nil {
		return wpath{}, err
	}
	if s == "" {
		s = def
	}
	p := wpath{given: s, rel: !strings.HasPrefix(s, "/")}
	name := clean(a.base(), s)
	if err := mounts.CheckPath(op, name); err != nil {
		return wpath{}, fmt.Errorf("%s %s: invalid path (control characters or an over-long name)", op, s)
	}
	p.name = name
	return p, nil
}

// base is the directory relative paths of this call resolve against, a
// name of the workspace FS.
func (a *args) base() string {
	if a.cwd == "" {
		return "."
	}
	return a.cwd
}

// clean is the one rule for "." and ".." in the tool face: p, absolute or
// relative to the directory dir (a name of the workspace FS, "." for the
// root), is cleaned lexically, and ".." at the root stays at the root, as
// POSIX has it (/.. is /) and as the kernel does in the shell. Path
// arguments, apply_patch paths and glob bases go through it, and symlink
// targets through the same rule in [mounts.Resolve] (Rooted), so no verb
// climbs above the root differently.
func clean(dir, p string) string {
	if !strings.HasPrefix(p, "/") {
		p = mounts.PathOf(dir) + "/" + p
	}
	return mounts.NameOf(path.Clean(p))
}

// resolve is the tool face's view of [mounts.Resolve]: every verb looks its
// path up here. It follows symlinks in every component of name (a cleaned
// name) the way the kernel does in the shell's namespace, where the
// workspace is the root: an absolute target is a workspace path, a
// relative one is relative to the link's directory, and ".." above the
// root stays at the root, as [clean] has it. With followFinal false the
// last component is not followed (lstat). With allowMissing, a missing
// tail is appended lexically and exists is false, so writers can create it.
func (w *Workspace) resolve(ctx context.Context, name string, followFinal, allowMissing bool) (real string, a mounts.Attr, exists bool, err error) {
	r, err := mounts.Resolve(ctx, w.fsys, name, mounts.ResolveOptions{Rooted: true, Lstat: !followFinal, AllowMissing: allowMissing})
	return r.Name, r.Attr, r.Exists, err
}

// explain turns an error from the tree into one actionable sentence about
// the workspace path p.
func (w *Workspace) explain(ctx context.Context, op string, p wpath, err error) error {
	where := p.abs()
	switch {
	case errors.Is(err, mounts.ErrReadOnly):
		m, _ := w.mountFor(p.name)
		if m.Writable {
			// The mount can change, so a policy (a read_only prefix, a
			// dry run) refused it.
			return fmt.Errorf("%s %s: read-only by policy", op, where)
		}
		msg := fmt.Sprintf("%s %s: read-only mount", op, where)
		if m.Prefix != "" {
			msg += fmt.Sprintf(" %s (%s)", m.Prefix, m.Source)
		}
		if wp := w.writablePrefixes(); len(wp) > 0 {
			msg += "; writable: " + strings.Join(wp, ", ")
		}
		return errors.New(msg)
	case errors.Is(err, fs.ErrNotExist):
		msg := fmt.Sprintf("%s %s: no such file or directory", op, where)
		if s := w.suggest(ctx, p); s != "" {
			msg += "; did you mean " + s + "?"
		} else if _, ok := w.mountFor(p.name); !ok && len(w.mounts) > 0 {
			msg += "; it is outside every mount (mounts: " + strings.Join(w.prefixes(), ", ") + ")"
		}
		return errors.New(msg)
	case errors.Is(err, mounts.ErrBusy):
		return fmt.Errorf("%s %s: it is a mount point or a directory of the mount table and cannot be changed", op, where)
	case errors.Is(err, mounts.ErrDenied):
		return fmt.Errorf("%s %s: denied by policy", op, where)
	case errors.Is(err, mounts.ErrIsDir):
		return fmt.Errorf("%s %s: is a directory; %s", op, where, listHint(ctx))
	case errors.Is(err, mounts.ErrNotDir):
		return fmt.Errorf("%s %s: a component of the path is not a directory", op, where)
	case errors.Is(err, mounts.ErrNotEmpty):
		return fmt.Errorf("%s %s: directory not empty; pass recursive: true to delete it with its contents", op, where)
	case errors.Is(err, mounts.ErrLoop):
		return fmt.Errorf("%s %s: too many levels of symbolic links", op, where)
	case errors.Is(err, mounts.ErrEscapes):
		return fmt.Errorf("%s %s: the path leaves its mount", op, where)
	case errors.Is(err, mounts.ErrSpecial):
		return fmt.Errorf("%s %s: is a FIFO, socket or device, not a regular file; use the shell to work with it", op, where)
	case errors.Is(err, mounts.ErrNotSupported):
		return fmt.Errorf("%s %s: the mount does not support this operation", op, where)
	case errors.Is(err, mounts.ErrNoSpace):
		return fmt.Errorf("%s %s: no space left (quota or device full)", op, where)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s %s: already exists", op, where)
	case errors.Is(err, fs.ErrInvalid):
		return fmt.Errorf("%s %s: invalid path", op, where)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s %s: cancelled", op, where)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %v", op, where, err)
}

func (w *Workspace) prefixes() []string {
	var out []string
	for _, m := range w.mounts {
		out = append(out, m.Prefix)
	}
	return out
}

// suggest finds where a relative path the caller probably meant lives: the
// same relative path under each mount point ("src/main.go" ->
// "/repo/src/main.go") and under the root. It returns "" when nothing
// fits.
func (w *Workspace) suggest(ctx context.Context, p wpath) string {
	if !p.rel || p.name == "." {
		return ""
	}
	var hits []string
	bases := []string{"."}
	for _, m := range w.mounts {
		bases = append(bases, mounts.NameOf(m.Prefix))
	}
	seen := map[string]bool{p.name: true}
	for _, b := range bases {
		cand := clean(b, p.given)
		if seen[cand] {
			continue
		}
		seen[cand] = true
		if _, _, ok, err := w.resolve(ctx, cand, true, false); err == nil && ok {
			hits = append(hits, mounts.PathOf(cand))
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return strings.Join(hits, " or ")
}
