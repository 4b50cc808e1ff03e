package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

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
}

// ShellBind is a host path bound at the same path in the shell's
// namespace, read-only unless Writable.
type ShellBind struct {
	Path     string
	Writable bool
}

// Shell limits of TOOLS.md.
const (
	shellDefaultTimeout = 120000 // ms
	shellMaxTimeout     = 600000 // ms
	shellOutputCap      = 30000  // bytes per stream
)

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

// capWriter keeps the first and the last half of the cap and counts the
// rest, so a long build log still shows both its start and its error.
type capWriter struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte
	total int
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n0 := len(p)
	c.total += n0
	half := shellOutputCap / 2
	if room := half - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*half {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-half:]...)
	}
	return n0, nil
}

func (c *capWriter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total <= shellOutputCap {
		return string(c.head) + string(c.tail)
	}
	tail := c.tail
	if len(tail) > shellOutputCap/2 {
		tail = tail[len(tail)-shellOutputCap/2:]
	}
	cut := c.total - len(c.head) - len(tail)
	return fmt.Sprintf("%s\n… [%d bytes truncated; output is capped at %d] …\n%s", c.head, cut, shellOutputCap, tail)
}

func (w *Workspace) shellVerb(ctx context.Context, a *args) (string, error) {
	command, err := a.str("command", true)
	if err != nil {
		return "", err
	}
	maxMs := int(w.limits.MaxShellTimeout.Milliseconds())
	timeout, err := a.integer("timeout", min(shellDefaultTimeout, maxMs), 1, maxMs)
	if err != nil {
		return "", err
	}
	run, err := w.prepareShell(ctx, a, "cwd")
	if err != nil {
		return "", err
	}
	if w.dryRun {
		return run.dryRun(command), nil
	}
	res, err := w.runShell(ctx, run, command, time.Duration(timeout)*time.Millisecond)
	if err != nil {
		return "", err
	}
	return res.canonical(), nil
}

// shellRun is where and how one shell call runs, settled before anything
// runs: prepareShell checks the directory and the workspace's names.
type shellRun struct {
	sess  *Session
	cwd   string   // workspace path
	names []string // top-level names to bind
	shell []string // the shell and its flags; nil is the workspace's ["/bin/bash", "-c"]
	tty   bool
	// note is said in the result: the session's directory was gone and
	// the call ran in the default one.
	note string
}

// prepareShell settles where a shell call runs: in the directory argument
// key (relative to the session's directory) when given, else in the
// session's directory, which must still exist (when it does not, the
// call runs in the default directory and says so).
func (w *Workspace) prepareShell(ctx context.Context, a *args, key string) (*shellRun, error) {
	run := &shellRun{sess: a.sess}
	implicit := !a.present(key)
	cwd, err := a.path(a.tool, key, false, "")
	if err != nil {
		return nil, err
	}
	if implicit {
		cwd = wpath{given: mounts.PathOf(a.base()), name: a.base()}
	}
	_, attr, _, err := w.resolve(ctx, cwd.name, true, false)
	switch {
	case err != nil && implicit && errors.Is(err, fs.ErrNotExist):
		def := w.defaultDir()
		run.note = fmt.Sprintf("the session's directory %s no longer exists; this ran in %s", cwd.abs(), def)
		cwd = wpath{given: def, name: mounts.NameOf(def)}
		if a.sess != nil {
			a.sess.setDir(def)
		}
	case err != nil:
		return nil, w.explain(ctx, a.tool+": "+a.key(key), cwd, err)
	case !attr.IsDir():
		return nil, fmt.Errorf("%s: %s %s is not a directory", a.tool, a.key(key), cwd.abs())
	}
	run.cwd = cwd.abs()
	if w.dryRun {
		return run, nil
	}
	names, err := w.shell.names(ctx)
	if err != nil {
		return nil, w.explain(ctx, a.tool, wpath{name: "."}, err)
	}
	if err := checkNames(names); err != nil {
		return nil, fmt.Errorf("%s: %v", a.tool, err)
	}
	run.names = names
	return run, nil
}

// dryRun is what a dry run says instead of running command.
func (r *shellRun) dryRun(command string) string {
	return fmt.Sprintf("would run in %s: %s %s", r.cwd, command, "(dry run: the command was not run)")
}

// shellResult is the outcome of one command run to its end (or killed at
// its timeout), in the parts every dialect's result is made of.
type shellResult struct {
	exitCode int
	stdout   string // merged output when the run merged the streams
	stderr   string
	elapsed  time.Duration
	killed   string // "timed out after N ms", "cancelled"; "" when it ended
	// dirNote says where the session's directory went when the command
	// ended outside the workspace (or could not be reported).
	dirNote string
}

// canonical is the shell verb's result text (TOOLS.md).
func (r shellResult) canonical() string {
	var b strings.Builder
	if r.killed != "" {
		fmt.Fprintf(&b, "the command %s; its process group was killed\n", r.killed)
	} else {
		fmt.Fprintf(&b, "exit code: %d\n", r.exitCode)
	}
	if s := r.stdout; s != "" {
		b.WriteString("--- stdout ---\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	if s := r.stderr; s != "" {
		b.WriteString("--- stderr ---\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	if r.dirNote != "" {
		b.WriteString("(" + r.dirNote + ")\n")
	}
	return b.String()
}

// runShell runs command as run says, with the shell's separate stdout and
// stderr (each capped at shellOutputCap, head and tail kept), to its end
// or its timeout, and moves the session to the directory the command
// ended in. A timeout is a tool error that still shows the output so far.
// This is the run path of every shell tool that waits for its command;
// the background jobs of other dialects start theirs with startShell.
func (w *Workspace) runShell(ctx context.Context, run *shellRun, command string, timeout time.Duration) (shellResult, error) {
	var stdout, stderr capWriter
	p, err := w.startShell(run, command, &stdout, &stderr)
	if err != nil {
		return shellResult{}, err
	}
	res := w.finishShell(ctx, run, p, timeout)
	res.stdout, res.stderr = stdout.String(), stderr.String()
	if res.killed != "" {
		return res, errors.New("shell: " + strings.TrimSuffix(res.canonical(), "\n"))
	}
	if p.waitErr != nil && p.exitCode < 0 {
		return res, fmt.Errorf("shell: %v", p.waitErr)
	}
	return res, nil
}

// startShell starts command as run says, its output going to out (and
// errOut; nil merges stderr into out). The caller waits for it with
// finishShell or keeps it in a session.
func (w *Workspace) startShell(run *shellRun, command string, out, errOut io.Writer) (*process, error) {
	shell := run.shell
	if shell == nil {
		shell = []string{w.shell.sh, "-c"}
	}
	return w.shell.start(procSpec{names: run.names, cwd: run.cwd, shell: shell, command: command, tty: run.tty, out: out, errOut: errOut})
}

// finishShell waits for p to end, killing its process group at the
// timeout or when ctx is done, and moves the session's directory.
func (w *Workspace) finishShell(ctx context.Context, run *shellRun, p *process, timeout time.Duration) shellResult {
	if !p.wait(ctx, timeout) {
		why := "cancelled"
		if ctx.Err() == nil {
			why = fmt.Sprintf("timed out after %d ms", timeout.Milliseconds())
		}
		p.stop(why)
	}
	res := shellResult{exitCode: p.exitCode, elapsed: time.Since(p.started), killed: p.whyKilled()}
	res.dirNote = w.followDir(run.sess, p)
	if run.note != "" {
		res.dirNote = strings.TrimPrefix(run.note+"; "+res.dirNote, "; ")
		res.dirNote = strings.TrimSuffix(res.dirNote, "; ")
	}
	return res
}

// followDir moves the session to the directory p's shell ended in, when
// the command changed directory and ended in the workspace; it returns a
// note when the command ended outside the workspace (the session stays).
func (w *Workspace) followDir(s *Session, p *process) string {
	final := p.finalDir
	if s == nil || final == "" || final == p.startDir {
		return ""
	}
	name := mounts.NameOf(final)
	if err := mounts.CheckPath("shell", name); err == nil {
		if _, attr, _, err := w.resolve(context.Background(), name, true, false); err == nil && attr.IsDir() {
			s.setDir(final)
			return ""
		}
	}
	return fmt.Sprintf("the shell ended in %s, outside the workspace; the session's directory stays %s", final, s.Dir())
}

// Command returns a command that runs argv in the shell's namespace with
// cwd (a workspace path) as its working directory, for callers that attach
// their own stdio (vfsmount exec). Its environment is the shell's. It
// fails when the workspace has no shell.
func (w *Workspace) Command(ctx context.Context, cwd string, argv ...string) (*exec.Cmd, error) {
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
	cmd := exec.CommandContext(ctx, w.shell.bwrap, w.shell.argv(names, cwd, argv, false)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}
