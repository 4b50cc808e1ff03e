package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
)

// Diff is what changed from checkpoint from to checkpoint to ("" means
// the workspace now), limited to paths (workspace paths; none means all),
// as git prints it in format: a git diff that git apply takes, names
// prefixed by their mount for a memory mount and the repository's own for
// a writable git mount (as its export prints them). A mount a checkpoint
// does not hold (a host directory, or a tree that restarted without it)
// has no part in it. It needs the git program. It shows every name: the
// diff of the person running the workspace; [Workspace.DiffFiltered] is
// the one to give anyone the path rules bind.
func (w *Workspace) Diff(ctx context.Context, from, to string, format gitfs.DiffFormat, paths ...string) (string, error) {
	text, _, err := w.DiffFiltered(ctx, from, to, format, nil, paths...)
	return text, err
}

// DiffFiltered is [Workspace.Diff] without the names withhold refuses: a
// changed name whose content withhold does not let be read (a deny_read
// rule) is not in the text, in any format, and is returned in withheld
// with withhold's reason instead. Before the diff it lists the names that
// changed (git diff --name-only), asks withhold about each, and then diffs
// only those it lets through: the bytes of a withheld name never leave
// git. A nil withhold withholds nothing, at no extra cost.
func (w *Workspace) DiffFiltered(ctx context.Context, from, to string, format gitfs.DiffFormat, withhold Filter, paths ...string) (_ string, withheld []Withheld, _ error) {
	if _, err := w.Get(from); err != nil {
		return "", nil, err
	}
	if to != "" {
		if _, err := w.Get(to); err != nil {
			return "", nil, err
		}
	}
	sel, err := w.pick(paths)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	for _, m := range w.Mounts() {
		names, ok := sel[m.Prefix]
		if !ok || m.Tree == nil || !m.Has(from) || (to != "" && !m.Has(to)) {
			continue
		}
		a, err := w.View(ctx, from, m.Prefix)
		if err != nil {
			return "", nil, err
		}
		var z mounts.FS = m.Tree
		if to != "" {
			if z, err = w.View(ctx, to, m.Prefix); err != nil {
				return "", nil, err
			}
		}
		var diff func(format gitfs.DiffFormat, names []string) (string, error)
		if m.Export != nil {
			diff = func(format gitfs.DiffFormat, names []string) (string, error) {
				return m.Export.ExportDiffStates(ctx, a, z, format.String(), names...)
			}
		} else {
			// Both states are written once, and diffed as often as the
			// withholding needs.
			trees, err := writeMemoryTrees(ctx, m.Prefix, a, z)
			if err != nil {
				return "", nil, fmt.Errorf("diff of %s: %w", m.Prefix, err)
			}
			defer trees.close()
			diff = trees.diff
		}
		if withhold != nil {
			var held []Withheld
			names, held, err = m.withhold(diff, names, withhold)
			if err != nil {
				return "", nil, fmt.Errorf("diff of %s: %w", m.Prefix, err)
			}
			withheld = append(withheld, held...)
			if names != nil && len(names) == 0 {
				continue // every change is withheld
			}
		}
		text, err := diff(format, names)
		if err != nil {
			return "", nil, fmt.Errorf("diff of %s: %w", m.Prefix, err)
		}
		b.WriteString(text)
	}
	return b.String(), withheld, nil
}

// withhold runs diff's listing of the names changed within names (the
// mount's; nil is all) and sorts them by withhold: it returns the names to
// diff (unchanged when nothing is withheld; an empty list when everything
// is) and the withheld ones.
func (m *Mount) withhold(diff func(gitfs.DiffFormat, []string) (string, error), names []string, withhold Filter) ([]string, []Withheld, error) {
	list, err := diff(gitfs.Names, names)
	if err != nil {
		return nil, nil, err
	}
	var pass []string
	var held []Withheld
	for _, full := range strings.Split(list, "\x00") {
		if full == "" {
			continue
		}
		name, ok := m.nameOf(full)
		if !ok {
			return nil, nil, fmt.Errorf("the diff names %q, which is not in the mount", full)
		}
		p := path.Join(m.Prefix, name)
		if err := withhold(p, false); err != nil {
			held = append(held, Withheld{Path: p, Reason: reasonOf(err)})
			continue
		}
		pass = append(pass, name)
	}
	if len(held) == 0 {
		return names, nil, nil
	}
	if pass == nil {
		pass = []string{}
	}
	return pass, held, nil
}

// nameOf is the mount's name of a name in m's diff: the repository's name
// for a writable git mount, the name under the mount's prefix for a memory
// mount.
func (m *Mount) nameOf(full string) (string, bool) {
	if m.Export != nil {
		return m.Export.MountName(full)
	}
	base := strings.TrimPrefix(m.Prefix, "/")
	if base == "" {
		return full, true
	}
	if strings.HasPrefix(full, base+"/") {
		return full[len(base)+1:], true
	}
	return "", false
}

// memoryTrees are two states of a memory mount written as commits into a
// scratch repository (by git fast-import), for git diff-tree to diff. File
// names carry the mount's prefix.
type memoryTrees struct {
	ctx  context.Context
	tmp  string
	base string
}

// writeMemoryTrees writes from and to, of the memory mount at prefix.
func writeMemoryTrees(ctx context.Context, prefix string, from, to mounts.FS) (_ *memoryTrees, err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: %v", gitfs.ErrNoGit, err)
	}
	tmp, err := os.MkdirTemp("", "vfsmount-ckdiff-")
	if err != nil {
		return nil, err
	}
	t := &memoryTrees{ctx: ctx, tmp: tmp, base: strings.TrimPrefix(prefix, "/")}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	if _, err := t.git(nil, "init", "-q", "--bare"); err != nil {
		return nil, err
	}
	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	for _, side := range []struct {
		ref  string
		fsys mounts.FS
	}{{"refs/heads/from", from}, {"refs/heads/to", to}} {
		fmt.Fprintf(w, "commit %s\ncommitter vfsmount <vfsmount> 0 +0000\ndata 0\n", side.ref)
		if err := importTree(ctx, w, side.fsys, ".", t.base); err != nil {
			return nil, err
		}
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if _, err := t.git(&stream, "fast-import", "--quiet"); err != nil {
		return nil, err
	}
	return t, nil
}

// diff is git's diff of the two states in format, limited to names (the
// mount's; none is all).
func (t *memoryTrees) diff(format gitfs.DiffFormat, names []string) (string, error) {
	var full []string
	for _, n := range names {
		full = append(full, path.Join(t.base, n))
	}
	return t.git(nil, gitfs.DiffTreeArgs(format, "refs/heads/from", "refs/heads/to", full...)...)
}

func (t *memoryTrees) close() { os.RemoveAll(t.tmp) }

func (t *memoryTrees) git(stdin *bytes.Buffer, args ...string) (string, error) {
	cmd := exec.CommandContext(t.ctx, "git", append([]string{"--literal-pathspecs", "--git-dir", t.tmp}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// importTree writes the files and symlinks at and below name as
// fast-import file commands, under base.
func importTree(ctx context.Context, w *bufio.Writer, fsys mounts.FS, name, base string) error {
	ents, err := fsys.ReadDir(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range ents {
		child := mounts.Join(name, e.Name)
		full := filepath.ToSlash(path.Join(base, child))
		switch {
		case e.Type.IsDir():
			if err := importTree(ctx, w, fsys, child, base); err != nil {
				return err
			}
		case e.Type&fs.ModeSymlink != 0:
			target, err := fsys.ReadLink(ctx, child)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "M 120000 inline %s\ndata %d\n%s\n", quotePath(full), len(target), target)
		case e.Type.IsRegular():
			a, err := fsys.Stat(ctx, child)
			if err != nil {
				return err
			}
			data, err := mounts.ReadFile(ctx, fsys, child)
			if err != nil {
				return err
			}
			mode := "100644"
			if a.Mode&0o111 != 0 {
				mode = "100755"
			}
			fmt.Fprintf(w, "M %s inline %s\ndata %d\n", mode, quotePath(full), len(data))
			w.Write(data)
			w.WriteString("\n")
		}
	}
	return nil
}

// quotePath quotes a path for fast-import when it needs it: C style, as
// git writes them.
func quotePath(p string) string {
	if !strings.ContainsAny(p, "\"\\\n") && !strings.HasPrefix(p, "\"") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
