package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// The shell's namespace: the bubblewrap command line every shell tool's
// command runs under, and what it binds where. How a command runs in it is
// shell_process.go; the verbs that run one are verbs_shell.go and the
// dialects' shell tools.

// ShellOptions enable the shell verb. The shell runs each command under
// bubblewrap (bwrap, found in PATH) in a private mount namespace built
// like this:
//
//   - read-only binds of the system directories that exist: /usr, /bin,
//     /sbin, /lib, /lib32, /lib64, /libx32, /etc;
//   - a private tmpfs on /tmp, a fresh /proc and a minimal /dev;
//   - for each top-level name N of the workspace, Mountpoint/N bound
//     read-write at /N, so /repo, /memory, /agent … appear at their
//     workspace paths and are served by the kernel face, the same tree the
//     file verbs use (a read-only mount is still read-only: the kernel face
//     refuses writes with EROFS);
//   - every other namespace unshared (user, ipc, pid, uts, cgroup, and the
//     network unless Network is set), --die-with-parent, and for the shell
//     tools --new-session (no controlling terminal), except codex's
//     exec_command with tty, whose controlling terminal is a private pty.
//
// The environment is minimal and fixed: PATH=/usr/local/sbin:/usr/local/bin:
// /usr/sbin:/usr/bin:/sbin:/bin, HOME=/tmp, TMPDIR=/tmp, LANG=C.UTF-8,
// TERM=dumb, USER and LOGNAME of the caller, plus Env.
type ShellOptions struct {
	// Mountpoint is the host directory where the kernel face serves the
	// workspace root.
	Mountpoint string
	// Env holds extra KEY=VALUE entries.
	Env []string
	// Network keeps the host network reachable from the shell.
	Network bool
	// Binds are host paths shown at the same path in the namespace, after
	// everything else (so also below /tmp): what a workspace's mounts
	// name by host path, such as the object directory a writable git
	// mount's .git borrows (read-only) and its fsmonitor hook's program
	// and socket. A path that does not exist is left out.
	Binds []ShellBind
	// Remote lists the mounts whose files are on another machine: a
	// command whose working directory lies in one runs on that machine
	// (its hostname, processes and toolchain), seeing the mount at its
	// workspace path where the machine can arrange it. A command
	// elsewhere runs here and sees them through the kernel face.
	Remote []RemoteShell
	// RemoteHere lists remote mounts whose commands nonetheless run
	// here (path rules bind them), for the brief to say.
	RemoteHere []string
}

// RemoteShell is a mount whose commands run on its own machine.
type RemoteShell struct {
	// Prefix is the mount's workspace path: "/workspace".
	Prefix string
	// Source names the machine for the brief: "ssh://build-box".
	Source string
	// Runner starts the commands.
	Runner mounts.CommandFS
	// Note says how the mount is served when that changes what the
	// model should expect ("served over SFTP …"); "" for a peer.
	Note string
	// Rest is set when the commands there see the rest of the workspace
	// at its paths too (served back over the link).
	Rest bool
}

// ShellBind is a host path bound at the same path in the shell's
// namespace, read-only unless Writable.
type ShellBind struct {
	Path     string
	Writable bool
}

// systemDirs are bound read-only when they exist; a workspace top-level
// name may not shadow them.
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"}

// reserved names of the sandbox root besides systemDirs.
var reservedDirs = []string{"tmp", "proc", "dev"}

type shellRunner struct {
	opts  ShellOptions
	bwrap string
	sh    string // /bin/bash, or /bin/sh without bash
	names func(context.Context) ([]string, error)
}

func newShellRunner(opts ShellOptions, names func(context.Context) ([]string, error)) (*shellRunner, error) {
	if opts.Mountpoint == "" {
		return nil, errors.New("no kernel mountpoint to bind")
	}
	if !filepath.IsAbs(opts.Mountpoint) {
		return nil, errors.New("the kernel mountpoint must be an absolute path")
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("bubblewrap (bwrap) not found: install the bubblewrap package")
	}
	r := &shellRunner{opts: opts, bwrap: path, sh: "/bin/sh", names: names}
	for _, p := range []string{"/bin/bash", "/usr/bin/bash"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			r.sh = "/bin/bash"
			break
		}
	}
	// Probe once: bubblewrap may be present but unable to create
	// namespaces (a container without user namespaces, seccomp).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := r.args(nil, "/", "true")
	out, err := exec.CommandContext(ctx, r.bwrap, args...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("bubblewrap does not work here: %v: %s", err, msg)
	}
	return r, nil
}

// remoteFor returns the remote mount whose machine runs a command in the
// workspace directory cwd, and cwd as a name of that mount.
func (r *shellRunner) remoteFor(cwd string) (RemoteShell, string, bool) {
	for _, rs := range r.opts.Remote {
		switch {
		case cwd == rs.Prefix:
			return rs, ".", true
		case strings.HasPrefix(cwd, rs.Prefix+"/"):
			return rs, cwd[len(rs.Prefix)+1:], true
		}
	}
	return RemoteShell{}, "", false
}

// args builds the bwrap command line that runs command with the shell.
func (r *shellRunner) args(names []string, cwd, command string) []string {
	return r.argv(names, cwd, []string{r.sh, "-c", command}, true)
}

// argv builds the bwrap command line that runs argv in the namespace.
// newSession detaches it from the controlling terminal (--new-session,
// against TIOCSTI injection); interactive use keeps the terminal.
func (r *shellRunner) argv(names []string, cwd string, argv []string, newSession bool) []string {
	a := []string{"--unshare-all"}
	if r.opts.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--die-with-parent")
	if newSession {
		a = append(a, "--new-session")
	}
	for _, d := range systemDirs {
		if _, err := os.Stat("/" + d); err == nil {
			a = append(a, "--ro-bind", "/"+d, "/"+d)
		}
	}
	a = append(a, "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev")
	for _, n := range names {
		a = append(a, "--bind", filepath.Join(r.opts.Mountpoint, n), "/"+n)
	}
	for _, b := range r.opts.Binds {
		if _, err := os.Lstat(b.Path); err != nil || !filepath.IsAbs(b.Path) {
			continue
		}
		if b.Writable {
			a = append(a, "--bind", b.Path, b.Path)
		} else {
			a = append(a, "--ro-bind", b.Path, b.Path)
		}
	}
	a = append(a, "--chdir", cwd, "--clearenv")
	for _, kv := range r.env() {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return append(append(a, "--"), argv...)
}

func (r *shellRunner) env() []string {
	user := os.Getenv("USER")
	if user == "" {
		user = "root"
		if os.Getuid() != 0 {
			user = fmt.Sprint(os.Getuid())
		}
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "TERM=dumb",
		"USER=" + user, "LOGNAME=" + user,
	}
	return append(env, r.opts.Env...)
}

// checkNames refuses a workspace whose top-level names would shadow the
// system directories the shell needs.
func checkNames(names []string) error {
	for _, n := range names {
		for _, d := range append(systemDirs[:len(systemDirs):len(systemDirs)], reservedDirs...) {
			if n == d {
				return fmt.Errorf("the workspace path /%s collides with the system directory /%s the shell needs; mount it elsewhere", n, d)
			}
		}
	}
	return nil
}

// topNames lists the top-level names of the workspace root, which the shell
// binds at their absolute paths.
func (w *Workspace) topNames(ctx context.Context) ([]string, error) {
	ents, err := w.fsys.ReadDir(ctx, ".")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names, nil
}

// Command returns a command that runs argv in the shell's namespace with
// cwd (a workspace path) as its working directory, for callers that attach
// their own stdio (vfsmount exec). Its environment is the shell's. It
// fails when the workspace has no shell.
func (w *Workspace) Command(ctx context.Context, cwd string, argv ...string) (*exec.Cmd, error) {
	return w.command(ctx, cwd, nil, false, argv)
}

// command is [Workspace.Command] with env (KEY=VALUE entries) set over the
// shell's environment, and detached from the controlling terminal when
// newSession is set (a command no terminal should reach: a linter).
func (w *Workspace) command(ctx context.Context, cwd string, env []string, newSession bool, argv []string) (*exec.Cmd, error) {
	if w.shell == nil {
		return nil, errors.New("this workspace has no shell (no kernel face, or bubblewrap does not work here)")
	}
	if len(argv) == 0 {
		return nil, errors.New("no command given")
	}
	if cwd == "" {
		cwd = "/"
		if wp := w.writablePrefixes(); len(wp) > 0 {
			cwd = wp[0]
		}
	}
	names, err := w.shell.names(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	a := w.shell.argv(names, cwd, argv, newSession)
	if len(env) > 0 {
		// The entries go just before the "--" that ends bubblewrap's
		// options, after (so over) the shell's own.
		opts := slices.Clone(a[:len(a)-len(argv)-1])
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			opts = append(opts, "--setenv", k, v)
		}
		a = append(append(opts, "--"), argv...)
	}
	cmd := exec.CommandContext(ctx, w.shell.bwrap, a...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}
