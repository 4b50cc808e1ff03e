package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/mounts/writablegit"
)

// dotGit is the name of the checkout's git directory in a writable git
// mount: an overlay's private name (not a change of the commit's tree).
const dotGit = ".git"

// staleToken is the fsmonitor token of an index made over an upper layer
// that already holds changes: the hook answers it with "everything", so
// git's first status checks every file once.
const staleToken = "vfsmount:stale"

// WritableGit is a git mount made writable (package writablegit) with what
// a workspace adds so that git works inside it as in a checkout of its
// commit: the .git it writes into the upper layer, git's fsmonitor hook
// answered from the overlay's change journal, and the host paths that .git
// needs at the same path in the shell tool's namespace.
type WritableGit struct {
	*writablegit.FS
	// binds are the host paths its .git needs in the shell's namespace:
	// the source's object directories (alternates), the hook program and
	// the fsmonitor socket.
	binds     []agentbridge.ShellBind
	closers   []func() error
	fsmSocket string
}

// WritableGitOptions configure [NewWritableGit].
type WritableGitOptions struct {
	// Overlay are the overlay's options (its Private names get .git).
	Overlay overlayfs.Options
	// Branch is the branch the .git's HEAD names ("" is the source's
	// current one, or a detached HEAD: gitfs.DotGitOptions).
	Branch string
	// Worktree is where git runs in the checkout: the mount's path in the
	// shell tool's namespace (its prefix, /repo). A new .git's index then
	// carries git's untracked cache for it, so git's first status reads
	// no directory (gitfs.DotGitOptions.Worktree). "" writes none.
	Worktree string
	// Hook is the command git runs as the fsmonitor hook, before SOCKET
	// VERSION TOKEN: the vfsmount binary and "fsmonitor", or the
	// vfsmount-fsmonitor program. Empty sets no hook: git then checks
	// every file itself.
	Hook []string
	// Logger receives its logs (nil: silent).
	Logger *slog.Logger
}

// NewWritableGit puts an overlay with upper as its upper layer on the
// commit git serves (writablegit.New) and makes git work in it: on the
// first start over an upper layer it writes the .git, through the overlay
// into the upper layer, where everything git writes later (index, refs,
// new objects, stash) lands too; at every start it rewrites
// .git/vfsmount.config, which names this run's fsmonitor hook. A mount of
// a subdir gets none: git's paths are the commit's. Errors wrap
// overlayfs.ErrOtherLower and ErrBadUpper (the upper is another commit's,
// or not one), gitfs.ErrBadBranch (opts.Branch), and nothing is written
// then. The caller closes it when the faces are down.
func NewWritableGit(ctx context.Context, git *gitfs.FS, upper mounts.FS, opts WritableGitOptions) (_ *WritableGit, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.Overlay.Private = append(opts.Overlay.Private, dotGit)
	if opts.Overlay.Logger == nil {
		opts.Overlay.Logger = log
	}
	wg, err := writablegit.New(ctx, git, upper, opts.Overlay)
	if err != nil {
		return nil, err
	}
	w := &WritableGit{FS: wg}
	if git.Subdir() != "" {
		log.Info("git mount writable without .git: it serves a subdir, and git's paths are the commit's root's")
		return w, nil
	}
	srv, err := serveFSMonitor(w.Journal(), log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			srv.Close()
		}
	}()
	w.closers = append(w.closers, srv.Close)
	w.fsmSocket = srv.path
	objects, err := git.ObjectsDir(ctx)
	if err != nil {
		return nil, err
	}
	w.binds = []agentbridge.ShellBind{{Path: objects}}
	for _, d := range git.ObjectDirs() {
		if d != objects {
			w.binds = append(w.binds, agentbridge.ShellBind{Path: d})
		}
	}
	hook := ""
	if len(opts.Hook) > 0 {
		w.binds = append(w.binds, agentbridge.ShellBind{Path: opts.Hook[0]}, agentbridge.ShellBind{Path: srv.path, Writable: true})
		var words []string
		for _, a := range append(slices.Clone(opts.Hook), srv.path) {
			words = append(words, shellQuote(a))
		}
		hook = "\tfsmonitor = " + gitConfigQuote(strings.Join(words, " ")) + "\n" +
			"\tfsmonitorHookVersion = 2\n"
	}

	a, err := w.Stat(ctx, dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeDotGit(ctx, opts, w, objects); err != nil {
			return nil, fmt.Errorf("writing .git: %w", err)
		}
	case err != nil:
		return nil, err
	case !a.IsDir():
		log.Warn("git mount writable: .git is not a directory; left alone, git will not work there")
		return w, nil
	}
	conf := "# Written by vfsmount at every start: the hook that answers git's fsmonitor\n" +
		"# queries from the mount's change journal. Edit .git/config instead.\n" +
		"[core]\n" + hook +
		"\tuntrackedCache = true\n"
	if err := mounts.WriteFile(ctx, w, dotGit+"/vfsmount.config", []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("writing .git/vfsmount.config: %w", err)
	}
	return w, nil
}

// Close stops answering git's fsmonitor hook. The overlay's layers are
// the caller's.
func (w *WritableGit) Close() error {
	var errs []error
	for _, c := range w.closers {
		errs = append(errs, c())
	}
	w.closers = nil
	return errors.Join(errs...)
}

// FSMonitorSocket is the socket that answers git's fsmonitor hook for the
// mount ("" when it has no .git).
func (w *WritableGit) FSMonitorSocket() string { return w.fsmSocket }

// ShellBinds are the host paths the .git needs at the same path in the
// shell tool's namespace.
func (w *WritableGit) ShellBinds() []agentbridge.ShellBind { return w.binds }

// writeDotGit writes a new .git for the commit.
func writeDotGit(ctx context.Context, opts WritableGitOptions, w *WritableGit, objects string) error {
	token, worktree := w.Journal().Token(), ""
	changes, err := w.Changes(ctx)
	if err != nil {
		return err
	}
	switch {
	case len(changes) > 0:
		token = staleToken
	case len(opts.Hook) > 0:
		// The checkout is the commit's tree, and the hook will say what
		// changes: git may trust an untracked cache of it.
		worktree = opts.Worktree
	}
	files, err := w.Git().DotGit(ctx, gitfs.DotGitOptions{Branch: opts.Branch, Token: token, Worktree: worktree, ObjectsDir: objects})
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
