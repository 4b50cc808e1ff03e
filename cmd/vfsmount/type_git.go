package main

import (
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
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
		},
		Build: buildGit,
	}
}

func buildGit(ctx context.Context, spec *mountSpec, env *buildEnv) (mounts.FS, error) {
	opts := gitfs.Options{
		Src:       spec.String("src"),
		Rev:       spec.String("rev"),
		Subdir:    spec.String("subdir"),
		CacheDir:  env.Git.CacheDir,
		Offline:   env.Git.Offline,
		CacheSize: env.Git.CacheSize,
		Logger:    env.Logger,
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
	return f, nil
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
