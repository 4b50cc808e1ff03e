package gitfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// Export turns a changed copy of the pinned commit (in practice an overlay
// over this mount) back into git: a tree, a diff against the commit, a
// commit on a branch. It runs the git binary on the mount's repository,
// with the plumbing commands only (read-tree, update-index, write-tree,
// diff-tree, commit-tree, update-ref), for two reasons: git's own diff is
// by definition what git apply accepts (renames, modes, symlinks, binary
// patches in git's base85 format), and git's ref locking is what keeps a
// ref update safe against a git running in the repository at the same
// time. The index is a temporary file, so the repository's own index,
// HEAD and working tree are never read or written.

// ErrRefExists is wrapped by [Tree.Commit] for a branch that exists when
// force is not given; the message names it.
var ErrRefExists = errors.New("branch already exists")

// ErrBadBranch is wrapped by [Tree.Commit] for a branch name git refuses,
// and for a branch checked out in a working tree of the repository, which
// Commit never moves.
var ErrBadBranch = errors.New("bad branch")

// ErrInSubmodule is wrapped by [FS.WriteTree] for a change inside a
// submodule the mount serves (Options.Submodules).
var ErrInSubmodule = errors.New("inside submodule")

// ErrNoGit is wrapped by [FS.WriteTree] when the git binary cannot be run.
var ErrNoGit = errors.New("the git program is needed to export changes")

// Edit is one change of the mount's tree, by name in the mount.
type Edit struct {
	Path string
	// Delete removes Path and everything below it. Otherwise the entry at
	// Path in the source, and for a directory everything below it,
	// replaces what the commit has at Path.
	Delete bool
}

// Tree is a tree written by [FS.WriteTree]: the pinned commit with the
// edits applied. Close it when done.
type Tree struct {
	f *FS
	// ID is the tree's object id.
	ID string
	// Skipped names the entries git cannot hold (FIFOs, sockets, devices),
	// left out of the tree.
	Skipped []string
	env     []string
	tmp     string
}

// WriteTree writes the tree of the pinned commit with edits applied, the
// content of every entry an edit names coming from src (names as in this
// mount). An unchanged entry of src that carries user.git.oid (an overlay
// shows it on entries it has not copied up) is taken by id, not read. With
// keep, new objects go into the repository (for [Tree.Commit]); otherwise
// into a temporary object directory that Close removes, so a diff leaves no
// trace in the repository. It costs a read of the commit's tree into an
// index plus the edited content.
func (f *FS) WriteTree(ctx context.Context, src mounts.FS, edits []Edit, keep bool) (_ *Tree, err error) {
	for _, e := range edits {
		if sub := f.submoduleAt(f.full(e.Path)); sub != "" {
			return nil, fmt.Errorf("gitfs: %s: %w %s: its changes belong to the submodule's repository, "+
				"not the superproject's tree; commit them there", e.Path, ErrInSubmodule, sub)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("gitfs: %w: %v", ErrNoGit, err)
	}
	tmp, err := os.MkdirTemp("", "vfsmount-export-")
	if err != nil {
		return nil, fmt.Errorf("gitfs: export: %w", err)
	}
	t := &Tree{f: f, tmp: tmp, env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if !keep {
		objects, err := t.git(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "objects")
		if err != nil {
			return nil, err
		}
		// git finds no repository without its object directory.
		if err := os.Mkdir(filepath.Join(tmp, "objects"), 0o700); err != nil {
			return nil, fmt.Errorf("gitfs: export: %w", err)
		}
		t.env = append(t.env, "GIT_OBJECT_DIRECTORY="+filepath.Join(tmp, "objects"),
			"GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.TrimSpace(objects))
	}
	if _, err := t.git(ctx, nil, "read-tree", f.commit.String()); err != nil {
		return nil, err
	}
	// What the commit has at or below each edited name goes first...
	var gone []string
	for _, e := range edits {
		gone = append(gone, f.full(e.Path))
	}
	var info bytes.Buffer
	if len(gone) > 0 {
		out, err := t.git(ctx, nil, append([]string{"ls-tree", "-r", "-z", "--full-tree", "--name-only",
			f.commit.String(), "--"}, gone...)...)
		if err != nil {
			return nil, err
		}
		for _, name := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
			if name != "" {
				fmt.Fprintf(&info, "0 %s\t%s\x00", strings.Repeat("0", len(f.commit.String())), name)
			}
		}
	}
	// ...then what src has there now.
	for _, e := range edits {
		if e.Delete {
			continue
		}
		if err := t.add(ctx, src, e.Path, &info); err != nil {
			return nil, err
		}
	}
	if info.Len() > 0 {
		if _, err := t.git(ctx, &info, "update-index", "-z", "--index-info"); err != nil {
			return nil, err
		}
	}
	id, err := t.git(ctx, nil, "write-tree")
	if err != nil {
		return nil, err
	}
	t.ID = strings.TrimSpace(id)
	return t, nil
}

// full is the name in the commit of a name in the mount.
func (f *FS) full(name string) string {
	switch {
	case f.subdir == "":
		return name
	case name == ".":
		return f.subdir
	}
	return f.subdir + "/" + name
}

// Subdir is the directory of the commit the mount serves ("" for the
// whole tree).
func (f *FS) Subdir() string { return f.subdir }

// MountName is the name in the mount of a name in the commit (as a diff
// prints it), and false for a name outside the mount's subdir.
func (f *FS) MountName(full string) (string, bool) {
	switch {
	case f.subdir == "":
		return full, true
	case full == f.subdir:
		return ".", true
	case strings.HasPrefix(full, f.subdir+"/"):
		return full[len(f.subdir)+1:], true
	}
	return "", false
}

// fullAll is full of each name.
func (f *FS) fullAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = f.full(n)
	}
	return out
}

// add writes the entry name of src, and everything below it, as index
// lines.
func (t *Tree) add(ctx context.Context, src mounts.FS, name string, info *bytes.Buffer) error {
	a, err := src.Stat(ctx, name)
	if err != nil {
		return fmt.Errorf("gitfs: export: %w", err)
	}
	var mode, id string
	switch {
	case a.IsDir():
		ents, err := src.ReadDir(ctx, name)
		if err != nil {
			return fmt.Errorf("gitfs: export: %w", err)
		}
		for _, e := range ents {
			if err := t.add(ctx, src, mounts.Join(name, e.Name), info); err != nil {
				return err
			}
		}
		return nil
	case a.Mode&fs.ModeSymlink != 0:
		mode = "120000"
		if id, err = t.blobID(ctx, src, name); err != nil {
			return err
		}
		if id == "" {
			target, err := src.ReadLink(ctx, name)
			if err != nil {
				return fmt.Errorf("gitfs: export: %w", err)
			}
			if id, err = t.hashObject(ctx, strings.NewReader(target)); err != nil {
				return err
			}
		}
	case a.Mode.IsRegular():
		mode = "100644"
		if a.Mode&0o100 != 0 {
			mode = "100755"
		}
		if id, err = t.blobID(ctx, src, name); err != nil {
			return err
		}
		if id == "" {
			fh, err := src.Open(ctx, name)
			if err != nil {
				return fmt.Errorf("gitfs: export: %w", err)
			}
			id, err = t.hashObject(ctx, io.NewSectionReader(fh, 0, a.Size))
			fh.Close()
			if err != nil {
				return err
			}
		}
	default:
		t.Skipped = append(t.Skipped, name)
		return nil
	}
	fmt.Fprintf(info, "%s %s\t%s\x00", mode, id, t.f.full(name))
	return nil
}

// blobID is the id an unchanged entry of src reports, "" when it reports
// none (it was changed, or src is not over a git mount).
func (t *Tree) blobID(ctx context.Context, src mounts.FS, name string) (string, error) {
	v, err := mounts.GetXattr(ctx, src, name, xattrOID)
	switch {
	case err == nil:
		return string(v), nil
	case errors.Is(err, mounts.ErrNoAttr), errors.Is(err, mounts.ErrNotSupported):
		return "", nil
	}
	return "", fmt.Errorf("gitfs: export: %w", err)
}

func (t *Tree) hashObject(ctx context.Context, r io.Reader) (string, error) {
	id, err := t.git(ctx, r, "hash-object", "-w", "--stdin")
	return strings.TrimSpace(id), err
}

// DiffFormat is how [Tree.Diff] prints.
type DiffFormat int

const (
	// Patch is a git diff with binary patches, which git apply accepts.
	Patch DiffFormat = iota
	// Stat is git diff --stat.
	Stat
	// NameStatus is git diff --name-status.
	NameStatus
	// Names lists every name the diff touches, each ended by NUL, renames
	// as a deletion and an addition (git diff --name-only -z
	// --no-renames): for a caller that decides about each name before it
	// shows a diff. [ParseDiffFormat] does not offer it.
	Names
)

// String is the format's name, as ParseDiffFormat reads it ("names" for
// Names, which it does not).
func (f DiffFormat) String() string {
	switch f {
	case Stat:
		return "stat"
	case NameStatus:
		return "name-status"
	case Names:
		return "names"
	}
	return "patch"
}

// ParseDiffFormat reads a format by its name in the CLI and JSON-RPC:
// "patch" (or ""), "stat", "name-status".
func ParseDiffFormat(name string) (DiffFormat, error) {
	switch name {
	case "", "patch":
		return Patch, nil
	case "stat":
		return Stat, nil
	case "name-status":
		return NameStatus, nil
	}
	return Patch, fmt.Errorf("format %q: want patch, stat or name-status", name)
}

// DiffTreeArgs are the arguments of git diff-tree that print the
// difference from tree-ish from to tree-ish to in format, renames found,
// limited to paths (the repository's names; none means all).
func DiffTreeArgs(format DiffFormat, from, to string, paths ...string) []string {
	args := []string{"diff-tree", "-r", "-M", "--no-color"}
	switch format {
	case Names:
		args = append(args, "--no-renames", "--name-only", "-z")
	case Stat:
		args = append(args, "--stat")
	case NameStatus:
		args = append(args, "--name-status")
	default:
		args = append(args, "-p", "--binary", "--full-index")
	}
	return append(append(args, from, to, "--"), paths...)
}

// Diff writes the difference from the pinned commit to the tree, limited
// to paths (names in the mount; none means all), renames detected. The
// names in it are the repository's (the subdir included), so the patch
// applies at the top of a checkout of the commit. Empty output means no
// change.
func (t *Tree) Diff(ctx context.Context, format DiffFormat, paths []string) (string, error) {
	return t.git(ctx, nil, DiffTreeArgs(format, t.f.commit.String(), t.ID, t.f.fullAll(paths)...)...)
}

// Commit writes the tree as a commit whose parent is the pinned commit, with
// message msg, and points refs/heads/branch at it. An existing branch is
// refused (ErrRefExists) unless force; a branch checked out in any working
// tree of the repository is refused always (ErrBadBranch): Commit never
// changes what a checkout shows. It returns the commit's id. The tree must
// have been written with keep.
func (t *Tree) Commit(ctx context.Context, msg, branch string, force bool) (string, error) {
	if _, err := t.git(ctx, nil, "check-ref-format", "--branch", branch); err != nil ||
		strings.HasPrefix(branch, "-") || strings.HasPrefix(branch, "@") {
		return "", fmt.Errorf("gitfs: branch %q: %w: not a valid branch name", branch, ErrBadBranch)
	}
	ref := "refs/heads/" + branch
	wt, err := t.git(ctx, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(wt, "\n") {
		if line == "branch "+ref {
			return "", fmt.Errorf("gitfs: branch %q: %w: it is checked out, and commit never moves a checked-out branch", branch, ErrBadBranch)
		}
	}
	if !force {
		if _, err := t.git(ctx, nil, "rev-parse", "--verify", "--quiet", ref); err == nil {
			return "", fmt.Errorf("gitfs: branch %q: %w (use force to replace it)", branch, ErrRefExists)
		}
	}
	env := t.env
	if _, err := t.git(ctx, nil, "var", "GIT_COMMITTER_IDENT"); err != nil {
		// No identity configured: name the program rather than fail.
		env = append(env, "GIT_AUTHOR_NAME=vfsmount", "GIT_AUTHOR_EMAIL=vfsmount@localhost",
			"GIT_COMMITTER_NAME=vfsmount", "GIT_COMMITTER_EMAIL=vfsmount@localhost")
	}
	id, err := t.gitEnv(ctx, env, strings.NewReader(msg), "commit-tree", t.ID, "-p", t.f.commit.String())
	if err != nil {
		return "", err
	}
	id = strings.TrimSpace(id)
	args := []string{"update-ref", "-m", "vfsmount commit", ref, id}
	if !force {
		args = append(args, "") // the old value: the ref must not exist
	}
	if _, err := t.git(ctx, nil, args...); err != nil {
		if !force {
			return "", fmt.Errorf("gitfs: branch %q: %w: %v", branch, ErrRefExists, err)
		}
		return "", err
	}
	return id, nil
}

// Close removes the temporary index and objects.
func (t *Tree) Close() error { return os.RemoveAll(t.tmp) }

func (t *Tree) git(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return t.gitEnv(ctx, t.env, stdin, args...)
}

// gitEnv runs git in the repository with only the plumbing's own settings:
// no pager, no global or system hooks of the user's terminal, literal
// pathspecs.
func (t *Tree) gitEnv(ctx context.Context, env []string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--literal-pathspecs", "-C", t.f.repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("gitfs: git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
