package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/internal/hostpath"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

// gitType is one commit of a git repository, read-only and lazy. The
// revision is resolved once, at start-up, to a full SHA that is logged and
// shown in the mount table.
//
// src is a host path or a URL (kindSource): a relative path is taken from
// the working directory, or from a config file's directory.
func gitType() mountType {
	return mountType{
		Name:    "git",
		Doc:     "one commit of a git repository (local path or URL), read-only, served lazily from git objects",
		Example: "type=git,src=.,rev=main,dst=/repo",
		Keys: map[string]keySpec{
			"src":    {Kind: kindSource, Required: true, Doc: "repository: a local path (bare or not) or a URL, cloned once into the cache"},
			"rev":    {Kind: kindString, Doc: "revision to pin: SHA, branch, tag, HEAD~3 (default HEAD)"},
			"subdir": {Kind: kindString, Doc: "serve only this directory of the commit"},
			"offline": {Kind: kindBool, Doc: "never fetch for this mount (as --offline for all): a URL must be cloned already, " +
				"and a file whose blob a partial clone lacks reads as EIO naming the object instead of being fetched from its promisor remote"},
			"submodules": {Kind: kindBool, Doc: "serve each submodule (gitlink) as its tree at the pinned commit when its repository " +
				"is found: .git/modules/NAME, its own .git in the worktree, or the URL in .gitmodules (cloned into the cache unless offline); " +
				"otherwise an empty directory, as git archive gives"},
			"index": {Kind: kindString, Doc: "search index of the tree, for grep: lazy (built on the first grep, the default), " +
				"eager (built at mount), off"},
			"writable": {Kind: kindBool, Doc: "copy-on-write: the commit stays the lower layer, changes go to an " +
				"upper layer (memory unless persist= or upper=); see vfsmount diff, commit, reset"},
			"persist": {Kind: kindPath, Doc: "with writable: file keeping the upper layer across restarts and crashes, " +
				"as a memory mount's persist="},
			"upper": {Kind: kindPath, Doc: "with writable: host directory holding the upper layer " +
				"(empty, or made over this commit; outside the workspace)"},
			"branch": {Kind: kindString, Doc: "with writable: the checkout's HEAD is refs/heads/NAME, made at the commit " +
				"(default: HEAD detached at the commit)"},
		},
		Check: checkGit,
		Build: buildGit,
	}
}

// checkGit judges the copy-on-write keys together: the upper layer is one
// of memory, a persist file or a host directory, and only a writable mount
// has one.
func checkGit(spec *mountSpec) error {
	switch spec.String("index") {
	case "", "lazy", "eager", "off":
	default:
		return specErrorf(spec.Origin, "key \"index\" must be lazy, eager or off, got %q", spec.String("index"))
	}
	if spec.Has("persist") && spec.Has("upper") {
		return specErrorf(spec.Origin, "keys \"persist\" and \"upper\" exclude each other: "+
			"the upper layer is a persist file or a host directory, not both")
	}
	if !spec.Bool("writable") {
		for _, k := range []string{"persist", "upper", "branch"} {
			if spec.Has(k) {
				return specErrorf(spec.Origin, "key %q needs key \"writable\": it holds the changes of a writable git mount", k)
			}
		}
	}
	return nil
}

// checkUppers refuses a host upper directory (upper=) that lies inside the
// workspace: inside another mount's source, a source inside it, or inside
// the mountpoint (mountpoint "" when not known yet). The overlay would see
// its own bookkeeping through the workspace, or a writer of the workspace
// could change the layer behind the overlay's back.
func checkUppers(specs []mountSpec, mountpoint string) error {
	for i := range specs {
		s := &specs[i]
		up := s.String("upper")
		if up == "" {
			continue
		}
		if mountpoint != "" && overlaps(up, mountpoint) {
			return specErrorf(s.Origin, "key \"upper\": %s is inside the workspace's mountpoint %s; put it elsewhere", up, mountpoint)
		}
		for j := range specs {
			o := &specs[j]
			for _, k := range []string{"src", "persist", "upper"} {
				if i == j && k == "upper" {
					continue
				}
				v := o.String(k)
				if v == "" || isURL(v) || !filepath.IsAbs(v) {
					continue
				}
				if overlaps(up, v) {
					return specErrorf(s.Origin, "key \"upper\": %s overlaps %s of %s (%s); "+
						"an upper layer must lie outside every mount's source", up, k, o.Origin, v)
				}
			}
		}
	}
	return nil
}

// overlaps reports whether one of two host paths is the other or lies
// below it, after resolving symlinks where the paths exist.
func overlaps(a, b string) bool {
	a, b = hostpath.Real(a), hostpath.Real(b)
	in := func(x, dir string) bool {
		rel, err := filepath.Rel(dir, x)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	return in(a, b) || in(b, a)
}

func buildGit(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	opts := gitfs.Options{
		Src:        spec.String("src"),
		Rev:        spec.String("rev"),
		Subdir:     spec.String("subdir"),
		CacheDir:   env.Git.CacheDir,
		Offline:    env.Git.Offline || spec.Bool("offline"),
		CacheSize:  env.Git.CacheSize,
		Logger:     env.Logger,
		Index:      gitfs.IndexMode(strings.TrimPrefix(spec.String("index"), "lazy")),
		Submodules: spec.Bool("submodules"),
	}
	if isTerminal(os.Stderr) {
		opts.Progress = os.Stderr
	}
	f, err := gitfs.Open(ctx, opts)
	switch {
	case errors.Is(err, gitfs.ErrBadSource), errors.Is(err, gitfs.ErrBadRev), errors.Is(err, gitfs.ErrBadSubdir):
		return nil, specErrorf(spec.Origin, "%w", err)
	case err != nil:
		return nil, err
	}
	env.OnClose(f.Close)
	env.Logger.Info("git mount pinned", "commit", f.Commit(), "rev", revOrHead(opts.Rev))
	if !spec.Bool("writable") {
		return f, nil
	}
	return buildWritable(ctx, spec, env, f)
}

// buildWritable puts an overlay on the git mount f: the upper layer is a
// memory tree, kept in a persist file, or a host directory.
func buildWritable(ctx context.Context, spec *mountSpec, env *buildEnv, f *gitfs.FS) (mounts.FS, error) {
	mopts := memfs.Options{Logger: env.Logger, Uid: env.Uid, Gid: env.Gid}
	var upper mounts.FS
	what := "memory"
	switch {
	case spec.Has("persist"):
		path := spec.String("persist")
		m, err := loadPersisted(spec, path, mopts, env)
		if err != nil {
			return nil, err
		}
		upper, what = m, "persist file "+path
	case spec.Has("upper"):
		dir := spec.String("upper")
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, specErrorf(spec.Origin, "key \"upper\": %v", err)
		}
		h, err := hostfs.Open(dir, hostfs.Options{Logger: env.Logger})
		switch {
		case errors.Is(err, hostfs.ErrBadSource):
			return nil, specErrorf(spec.Origin, "key \"upper\": %v", err)
		case err != nil:
			return nil, err
		}
		env.OnClose(h.(interface{ Close() error }).Close)
		upper, what = h, "upper directory "+dir
	default:
		upper = memfs.New(mopts)
		t, err := env.Resume.tree(ctx, spec.Dst, store.LayerUpper, mopts)
		if err != nil {
			return nil, err
		}
		if t != nil {
			if err := env.Resume.r.CheckCommit(spec.Dst, f.Commit()); err != nil {
				return nil, storeError(err)
			}
			upper, what = t, "resumed from the store"
		}
	}
	if env.Resume != nil && (spec.Has("persist") || spec.Has("upper")) {
		if m, ok := env.Resume.r.Mount(spec.Dst); ok && m.Tree != nil {
			return nil, specErrorf(spec.Origin, "keys \"persist\" and \"upper\" exclude --resume: a resumed upper layer comes from the store")
		}
	}
	w, err := workspace.NewWritableGit(ctx, f, upper, workspace.WritableGitOptions{
		Overlay:  overlayfs.Options{Logger: env.Logger},
		Branch:   spec.String("branch"),
		Worktree: filepath.Join(env.Worktree, spec.Dst),
		Hook:     env.Hook,
		Logger:   env.Logger,
	})
	switch {
	case errors.Is(err, overlayfs.ErrOtherLower), errors.Is(err, overlayfs.ErrBadUpper):
		// Refused before anything was written: the layer is left as it was.
		return nil, specErrorf(spec.Origin, "%s: %v (left untouched)", what, err)
	case errors.Is(err, gitfs.ErrBadBranch):
		return nil, specErrorf(spec.Origin, "key \"branch\": %v", err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", spec.Dst, err)
	}
	env.OnClose(w.Close)
	env.Logger.Info("git mount writable", "commit", f.Commit(), "upper", what)
	return w, nil
}

func revOrHead(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev
}

// isTerminal reports whether w is a terminal, for the clone progress bar.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
