package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ShellOptions enable the shell verb. The shell runs each command under
// bubblewrap in a private mount namespace built like this:
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
//     verb --new-session (no controlling terminal).
//
// The environment is minimal and fixed: PATH=/usr/local/sbin:/usr/local/bin:
// /usr/sbin:/usr/bin:/sbin:/bin, HOME=/tmp, TMPDIR=/tmp, LANG=C.UTF-8,
// TERM=dumb, USER and LOGNAME of the caller, plus Env.
type ShellOptions struct {
	// Mountpoint is the host directory where the kernel face serves the
	// workspace root.
	Mountpoint string
	// Bwrap is the bubblewrap binary; "" looks up "bwrap" in PATH.
	Bwrap string
	// Env holds extra KEY=VALUE entries.
	Env []string
	// Network keeps the host network reachable from the shell.
	Network bool
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
	bw := opts.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	path, err := exec.LookPath(bw)
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
	def := "/"
	if wp := w.writablePrefixes(); len(wp) > 0 {
		def = wp[0]
	}
	cwd, err := a.path("shell", "cwd", false, def)
	if err != nil {
		return "", err
	}
	if _, attr, _, err := w.resolve(ctx, cwd.name, true, false); err != nil {
		return "", w.explain(ctx, "shell: cwd", cwd, err)
	} else if !attr.IsDir() {
		return "", fmt.Errorf("shell: cwd %s is not a directory", cwd.abs())
	}
	if w.dryRun {
		// Not run: a command may have effects outside the tree (the
		// network, when it is on), and what it would change inside
		// cannot be shown before it runs.
		return fmt.Sprintf("would run in %s: %s %s", cwd.abs(), command, "(dry run: the command was not run)"), nil
	}
	names, err := w.shell.names(ctx)
	if err != nil {
		return "", w.explain(ctx, "shell", wpath{name: "."}, err)
	}
	if err := checkNames(names); err != nil {
		return "", fmt.Errorf("shell: %v", err)
	}
	return w.shell.run(ctx, names, cwd.abs(), command, time.Duration(timeout)*time.Millisecond)
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

// run executes command and reports its exit code and output. A non-zero
// exit is a result, not a tool error: the command ran. A timeout is a tool
// error that still shows the output so far.
func (r *shellRunner) run(ctx context.Context, names []string, cwd, command string, timeout time.Duration) (string, error) {
	cmd := exec.Command(r.bwrap, r.args(names, cwd, command)...)
	var stdout, stderr capWriter
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil
	// Its own process group, so the timeout kills everything it started;
	// bwrap's pid namespace takes the rest down with its init.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("shell: cannot start bubblewrap: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	var why string
	select {
	case err = <-done:
	case <-timer.C:
		why = fmt.Sprintf("timed out after %d ms", timeout.Milliseconds())
	case <-ctx.Done():
		why = "cancelled"
	}
	if why != "" {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	var b strings.Builder
	code := cmd.ProcessState.ExitCode()
	if why != "" {
		fmt.Fprintf(&b, "the command %s; its process group was killed\n", why)
	} else {
		fmt.Fprintf(&b, "exit code: %d\n", code)
	}
	if s := stdout.String(); s != "" {
		b.WriteString("--- stdout ---\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	if s := stderr.String(); s != "" {
		b.WriteString("--- stderr ---\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	if err != nil && code < 0 && why == "" {
		return "", fmt.Errorf("shell: %v", err)
	}
	if why != "" {
		return "", errors.New("shell: " + strings.TrimSuffix(b.String(), "\n"))
	}
	return b.String(), nil
}
