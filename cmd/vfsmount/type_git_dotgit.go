package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
)

// dotGit is the name of the checkout's git directory in a writable git
// mount: an overlay's private name (not a change of the commit's tree).
const dotGit = ".git"

// staleToken is the fsmonitor token of an index made over an upper layer
// that already holds changes: the hook answers it with "everything", so
// git's first status checks every file once.
const staleToken = "vfsmount:stale"

// setupDotGit makes git work in the writable git mount w as in a checkout
// of its commit (gitfs.DotGit says what the .git holds): on the first
// start over an upper layer it writes the .git, through the overlay into
// the upper layer, where everything git writes later (index, refs, new
// objects, stash) lands too; at every start it rewrites
// .git/vfsmount.config, which names this run's fsmonitor hook. A mount of
// a subdir gets none: git's paths are the commit's.
func setupDotGit(ctx context.Context, spec *mountSpec, env *buildEnv, w *writableGit) error {
	if spec.String("subdir") != "" {
		env.Logger.Info("git mount writable without .git: it serves a subdir, and git's paths are the commit's root's")
		return nil
	}
	log := env.Logger
	srv, err := serveFSMonitor(w.Journal(), log)
	if err != nil {
		return err
	}
	env.OnClose(srv.Close)
	exe, err := hookProgram()
	if err != nil {
		return fmt.Errorf("the fsmonitor hook: this program's path: %w", err)
	}
	objects, err := w.Git().ObjectsDir(ctx)
	if err != nil {
		return err
	}
	w.binds = []shellBind{{Path: objects}}
	hook := ""
	if exe != "" {
		w.binds = append(w.binds, shellBind{Path: exe}, shellBind{Path: srv.path, Writable: true})
		hook = "\tfsmonitor = " + gitConfigQuote(shellQuote(exe)+" fsmonitor "+shellQuote(srv.path)) + "\n" +
			"\tfsmonitorHookVersion = 2\n"
	}

	a, err := w.Stat(ctx, dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeDotGit(ctx, spec, w, objects); errors.Is(err, gitfs.ErrBadBranch) {
			return specErrorf(spec.Origin, "key \"branch\": %v", err)
		} else if err != nil {
			return fmt.Errorf("writing %s/.git: %w", spec.Dst, err)
		}
	case err != nil:
		return err
	case !a.IsDir():
		log.Warn("git mount writable: .git is not a directory; left alone, git will not work there")
		return nil
	}
	conf := "# Written by vfsmount at every start: the hook that answers git's fsmonitor\n" +
		"# queries from the mount's change journal. Edit .git/config instead.\n" +
		"[core]\n" + hook +
		"\tuntrackedCache = true\n"
	if err := mounts.WriteFile(ctx, w, dotGit+"/vfsmount.config", []byte(conf), 0o644); err != nil {
		return fmt.Errorf("writing %s/.git/vfsmount.config: %w", spec.Dst, err)
	}
	return nil
}

// writeDotGit writes a new .git for the commit.
func writeDotGit(ctx context.Context, spec *mountSpec, w *writableGit, objects string) error {
	token := w.Journal().Token()
	changes, err := w.Changes(ctx)
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		token = staleToken
	}
	files, err := w.Git().DotGit(ctx, gitfs.DotGitOptions{Branch: spec.String("branch"), Token: token, ObjectsDir: objects})
	if err != nil {
		return err
	}
	files["config"] = []byte("[core]\n" +
		"\trepositoryformatversion = 0\n" +
		"\tfilemode = true\n" +
		"\tbare = false\n" +
		"\tlogallrefupdates = true\n" +
		"[include]\n" +
		"\tpath = vfsmount.config\n")
	// The index goes last: a .git half written by a crash has no index,
	// and git rebuilds one from HEAD (git reset) rather than trust it.
	names := make([]string, 0, len(files))
	for n := range files {
		if n != "index" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if err := mounts.Mkdir(ctx, w, dotGit, 0o755); err != nil {
		return err
	}
	for _, n := range append(names, "index") {
		p := dotGit + "/" + strings.TrimSuffix(n, "/")
		if strings.HasSuffix(n, "/") {
			err = mounts.Mkdir(ctx, w, p, 0o755)
		} else {
			err = mounts.WriteFile(ctx, w, p, files[n], 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// gitConfigQuote quotes s as a git config value.
func gitConfigQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// hookProgram is the program git runs as the fsmonitor hook: this binary,
// or $VFSMOUNT_FSMONITOR_PROGRAM. A test binary is not the command line,
// so in one there is no hook unless the variable names one ("": git then
// checks every file itself).
func hookProgram() (string, error) {
	if p := os.Getenv("VFSMOUNT_FSMONITOR_PROGRAM"); p != "" {
		return filepath.Abs(p)
	}
	if testing.Testing() {
		return "", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}
