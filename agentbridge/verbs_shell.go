package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// The shell verb, and the run path every shell tool shares: where a call
// runs (prepareShell), starting its command (startShell) and waiting for
// it (finishShell), and the session's directory after it (followDir).

// Shell limits of TOOLS.md.
const (
	shellDefaultTimeout = 120000 // ms
	shellMaxTimeout     = 600000 // ms
	shellOutputCap      = 30000  // bytes per stream
)

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
	// keepDir: the command's cd does not move the session (Codex starts
	// every command in the session's working directory).
	keepDir bool
	// note is said in the result: the session's directory was gone and
	// the call ran in the default one.
	note string
	// after is where the output of jobs the command leaves running goes
	// once it has ended (procSpec.after); nil keeps it apart.
	after io.Writer
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
	// jobs is the session's id for the jobs the command left running (0:
	// none); jobsNote says why they were stopped instead.
	jobs     int
	jobsNote string
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
	if r.jobs != 0 {
		fmt.Fprintf(&b, "(jobs the command started are still running as job %d: read %s for their output; they are stopped when this session ends)\n", r.jobs, taskPath(r.jobs))
	}
	if r.jobsNote != "" {
		b.WriteString("(" + r.jobsNote + ")\n")
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
	if p.exitCode < 0 && p.waitErr != nil { // waitErr is set before an exit ends the command
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
	spec := procSpec{names: run.names, cwd: run.cwd, shell: shell, command: command, tty: run.tty, out: out, errOut: errOut, after: run.after}
	if rs, rel, ok := w.shell.remoteFor(run.cwd); ok && !run.tty {
		return w.shell.startRemote(rs, rel, spec)
	}
	return w.shell.start(spec)
}

// finishShell waits for p to end, killing its process group at the
// timeout or when ctx is done, moves the session's directory, and keeps
// the jobs the command left running in the session.
func (w *Workspace) finishShell(ctx context.Context, run *shellRun, p *process, timeout time.Duration) shellResult {
	if !p.wait(ctx, timeout) {
		why := "cancelled"
		if ctx.Err() == nil {
			why = fmt.Sprintf("timed out after %d ms", timeout.Milliseconds())
		}
		p.stop(why)
	}
	res := shellResult{exitCode: p.exitCode, elapsed: time.Since(p.started), killed: p.whyKilled()}
	res.jobs, res.jobsNote = w.keepJobs(run.sess, p)
	if !run.keepDir {
		res.dirNote = w.followDir(run.sess, p)
	}
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
