// Package writablegit is a git mount made writable: an overlay (package
// overlayfs) whose lower layer is one commit (package gitfs), and the way
// its changes go back to git — a diff against the commit that git apply
// takes, and a commit on it in the source repository.
//
//	g, _ := gitfs.Open(ctx, gitfs.Options{Source: "/src/repo", Rev: "main"})
//	w, _ := writablegit.New(ctx, g, memfs.New(memfs.Options{}), overlayfs.Options{})
//	... writes through w (or the union and faces over it) ...
//	patch, _ := w.Diff(ctx, gitfs.Patch)
//	id, _ := w.Commit(ctx, "agent work", "agent/work", false)
//
// The diff and the commit need the git program; they write objects to a
// temporary directory (a diff) or the source's object store (a commit)
// and never touch the source's HEAD, index, working tree or checked-out
// branches (see [gitfs.Tree.Commit]).
package writablegit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

// FS is a writable git mount: every method of the overlay, and the export
// of its changes.
type FS struct {
	*overlayfs.FS
	git *gitfs.FS
}

// New puts an overlay with upper as its upper layer on the commit git
// serves. opts are the overlay's; LowerID is set to the commit (an upper
// of another commit is refused, overlayfs.ErrOtherLower), and git's own
// attributes (user.git.*) are the lower's to show.
func New(ctx context.Context, git *gitfs.FS, upper mounts.FS, opts overlayfs.Options) (*FS, error) {
	opts.LowerID = git.Commit()
	opts.OwnXattrs = append(opts.OwnXattrs, "user.git.")
	ov, err := overlayfs.New(ctx, git, upper, opts)
	if err != nil {
		return nil, err
	}
	return &FS{FS: ov, git: git}, nil
}

// Git is the commit below.
func (w *FS) Git() *gitfs.FS { return w.git }

// Describe says what the mount is: copy-on-write over git@SHA.
func (w *FS) Describe() mounts.Description {
	d := w.FS.Describe()
	d.Source = "copy-on-write over " + d.Source
	return d
}

// Diff is the mount's changes against its commit in format, limited to
// names (the mount's; none means all): what `git diff` prints in a
// checkout, with renames, modes, symlinks and binary patches. Empty when
// nothing changed.
func (w *FS) Diff(ctx context.Context, format gitfs.DiffFormat, names ...string) (string, error) {
	tr, err := w.Tree(ctx, false)
	if err != nil || tr == nil {
		return "", err
	}
	defer tr.Close()
	return tr.Diff(ctx, format, names)
}

// Commit writes the mount's state as a commit on its commit, on
// refs/heads/branch of the source repository (an existing branch only
// with force: gitfs.ErrRefExists), and returns its id; "" when there is
// nothing to commit (no change, or changes that undo themselves).
func (w *FS) Commit(ctx context.Context, msg, branch string, force bool) (string, error) {
	tr, err := w.Tree(ctx, true)
	if err != nil || tr == nil {
		return "", err
	}
	defer tr.Close()
	if same, err := tr.Diff(ctx, gitfs.NameStatus, nil); err != nil || same == "" {
		return "", err // changed and changed back
	}
	return tr.Commit(ctx, msg, branch, force)
}

// Tree writes the tree of the mount's state as git objects (kept in the
// source's object store with keep, else in a temporary directory the
// tree's Close removes); nil when nothing changed.
func (w *FS) Tree(ctx context.Context, keep bool) (*gitfs.Tree, error) {
	changes, err := w.Changes(ctx)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	return w.git.WriteTree(ctx, w.FS, edits(changes), keep)
}

// State is a state of the mount: the live overlay, or an overlay of the
// same commit over another upper (overlayfs.FS.Over: a checkpoint's).
type State interface {
	mounts.FS
	Changes(ctx context.Context) ([]overlayfs.Change, error)
}

// DiffStates is the difference from state from to state to, in format and
// limited to names, as [FS.Diff] prints it.
func (w *FS) DiffStates(ctx context.Context, from, to State, format gitfs.DiffFormat, names ...string) (string, error) {
	tree := func(s State) (*gitfs.Tree, error) {
		changes, err := s.Changes(ctx)
		if err != nil {
			return nil, err
		}
		return w.git.WriteTree(ctx, s, edits(changes), false)
	}
	a, err := tree(from)
	if err != nil {
		return "", fmt.Errorf("writablegit: the state diffed from: %w", err)
	}
	defer a.Close()
	b, err := tree(to)
	if err != nil {
		return "", fmt.Errorf("writablegit: the state diffed to: %w", err)
	}
	defer b.Close()
	return b.DiffFrom(ctx, a, format, names)
}

// The export capability ([mounts.ExportFS]): what a workspace's services
// find on the mount, by method presence.
var _ mounts.ExportFS = (*FS)(nil)

// BaseCommit is the full id of the commit below.
func (w *FS) BaseCommit() string { return w.git.Commit() }

// ExportDiff is [FS.Diff] in a format named as gitfs.ParseDiffFormat reads
// it, or "names" ([gitfs.Names]).
func (w *FS) ExportDiff(ctx context.Context, format string, names ...string) (string, error) {
	f, err := parseFormat(format)
	if err != nil {
		return "", err
	}
	return w.Diff(ctx, f, names...)
}

// ExportDiffStates is [FS.DiffStates] of two states of the mount: itself
// or views of it (a checkpoint's, [overlayfs.FS.CheckpointView]).
func (w *FS) ExportDiffStates(ctx context.Context, from, to mounts.FS, format string, names ...string) (string, error) {
	f, err := parseFormat(format)
	if err != nil {
		return "", err
	}
	a, ok := from.(State)
	z, ok2 := to.(State)
	if !ok || !ok2 {
		return "", fmt.Errorf("writablegit: not states of the mount: %T, %T", from, to)
	}
	return w.DiffStates(ctx, a, z, f, names...)
}

// MountName is the mount's name of a repository's name in its diffs.
func (w *FS) MountName(full string) (string, bool) { return w.git.MountName(full) }

// ExportCommit is [FS.Commit].
func (w *FS) ExportCommit(ctx context.Context, msg, branch string, force bool) (string, error) {
	return w.Commit(ctx, msg, branch, force)
}

// ExportReset brings names (and what is below them; "." the whole mount)
// back to the commit ([overlayfs.FS.Reset]) and returns every name it
// changed: each changed name at or below one of names, and the name a
// renamed one came from. After a failure some names may be reset already:
// they are returned too.
func (w *FS) ExportReset(ctx context.Context, names ...string) ([]string, error) {
	changes, err := w.Changes(ctx)
	if err != nil {
		return nil, err
	}
	touched := slices.Clone(names)
	for _, c := range changes {
		for _, n := range names {
			if n == "." || c.Path == n || strings.HasPrefix(c.Path, n+"/") {
				touched = append(touched, c.Path)
				if c.From != "" {
					touched = append(touched, c.From)
				}
				break
			}
		}
	}
	slices.Sort(touched)
	return slices.Compact(touched), w.Reset(ctx, names...)
}

func parseFormat(name string) (gitfs.DiffFormat, error) {
	if name == "names" {
		return gitfs.Names, nil
	}
	return gitfs.ParseDiffFormat(name)
}

// edits turns the overlay's changes into the tree edits that make the
// commit's tree into the overlay's: a deletion removes, a file is written
// again, and a directory whose contents are not the commit's at its name
// (new, renamed, opaque, or in place of a file) is written whole, which
// covers every change below it. A directory whose mode alone changed is
// nothing to git.
func edits(changes []overlayfs.Change) []gitfs.Edit {
	var out []gitfs.Edit
	covered := ""
	for _, c := range changes {
		if covered != "" && strings.HasPrefix(c.Path, covered+"/") {
			continue
		}
		switch {
		case c.Kind == overlayfs.Deleted:
			out = append(out, gitfs.Edit{Path: c.Path, Delete: true})
		case !c.Mode.IsDir():
			out = append(out, gitfs.Edit{Path: c.Path})
		case c.Kind == overlayfs.Modified && c.LowerMode.IsDir() && c.From == "" && !c.Opaque:
		default:
			out = append(out, gitfs.Edit{Path: c.Path})
			covered = c.Path
		}
	}
	return out
}
