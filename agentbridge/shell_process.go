package agentbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts"

	"github.com/creack/pty"
)

// process is one command running in the shell's namespace
// (shell_namespace.go): every shell tool runs through it (verbs_shell.go
// for the shell verb and the run path the dialects' shells share,
// dialect_codex_exec.go for codex's exec_command, write_stdin and
// shell_command). It may outlive the call that started it when a
// [Session] keeps it (shell_session.go).
//
// The command runs as `SHELL -c 'trap … EXIT; COMMAND'`: the trap writes
// the shell's final directory and exit status to a pipe on fd 3 (the side
// channel), so a `cd` carries to the session without parsing the command.
// When the trap cannot run (the command replaced the shell with exec, set
// its own EXIT trap, or was killed) nothing is reported, the session's
// directory stays as it was, and the command ends when its process does.
//
// A command ends when its shell does, not when everything it started
// does: `server &` returns at once, as in a terminal. On this machine the
// trap then keeps the namespace alive (bubblewrap's pid namespace dies with
// the shell) until the jobs it left are gone; their output from then on
// goes elsewhere (procSpec.after), and the caller keeps the process in its
// session, which stops the jobs when it ends (shell_jobs.go).
type process struct {
	id       int    // the session's id for it; 0 until a session keeps it
	cmdline  string // as the caller gave it, for messages
	startDir string // workspace path it started in
	tty      bool
	started  time.Time

	cmd    *exec.Cmd
	remote mounts.Process // instead of cmd: a command on a remote mount's machine
	buf    *outBuf        // merged output not yet read (exec_command), or nil
	log    *capWriter     // all merged output, head and tail kept (a Claude Code background task), or nil
	ptmx   *os.File       // the pty's master (tty only): input and output
	side   *os.File       // read end of the side channel

	// ended is closed when the command has ended: its shell reported its
	// end, or the process exited. done is closed when the process and
	// every job the command left running have exited.
	ended    chan struct{}
	endOnce  sync.Once
	done     chan struct{}
	exitCode int    // valid after ended; -1 when killed by a signal
	signaled int    // valid after ended: 128+signal when killed by one, else 0
	waitErr  error  // valid after done
	finalDir string // valid after ended: the shell's last $PWD, "" if unknown
	jobs     int    // valid after ended: how many jobs the command left running
	// outs are the output pipes this package copies (not a terminal's, not
	// a remote command's): drained at the command's end, then switched to
	// after, where the jobs' later output goes.
	outs  []*outPipe
	after io.Writer

	mu      sync.Mutex
	used    time.Time
	killed  string // why it was killed, "" when it was not
	cutting bool   // the output is being switched to after
}

// procSpec says what to start.
type procSpec struct {
	names   []string // the workspace's top-level names, bound at their paths
	cwd     string   // workspace path to start in
	shell   []string // the shell and its flags, e.g. ["/bin/bash", "-c"]
	command string
	tty     bool
	// out and errOut receive the output: with tty both streams are the
	// terminal's and go to out; errOut nil merges stderr into out.
	out, errOut io.Writer
	// after receives what the jobs a command left running print once the
	// command has ended (both streams); nil is a new capWriter
	// (process.after). Not for a terminal or a remote command.
	after io.Writer
}

// cwdTrap reports the shell's final directory on fd 3 and keeps its exit
// status. It is on the command's first line so bash's line numbers in
// error messages are the caller's. A remote command's shell runs it (and
// a terminal's): there the call ends with the shell, and the session does
// not keep its jobs.
const cwdTrap = `trap '__vfsmount_rc=$?; printf "%s\0" "$PWD" 2>/dev/null >&3; exit $__vfsmount_rc' EXIT; `

// jobTrap is cwdTrap with the exit status and the number of jobs the
// command left running in the report ("DIR\0RC\0JOBS\0"), after which
// the shell waits for those jobs: its own children, then any other live
// process of the namespace (one started with setsid or in a subshell, now
// a child of bubblewrap's pid 1), polled every half second. The namespace
// lives as long as the shell, so this is what keeps `server &` running.
// Zombies are not jobs. Each step tolerates set -e and set -u.
const jobTrap = `trap '__vfsmount_rc=$?; ` +
	`__vfsmount_jobs() { __vfsmount_n=0; for __vfsmount_p in /proc/[0-9]*; do case ${__vfsmount_p#/proc/} in 1|$$) continue;; esac; ` +
	`__vfsmount_s=; read -r __vfsmount_s < "$__vfsmount_p/stat" 2>/dev/null || continue; __vfsmount_s=${__vfsmount_s##*) }; ` +
	`case $__vfsmount_s in Z*) ;; *) __vfsmount_n=$((__vfsmount_n+1));; esac; done; }; ` +
	`__vfsmount_jobs; printf "%s\0%s\0%s\0" "$PWD" "$__vfsmount_rc" "$__vfsmount_n" 2>/dev/null >&3; exec 3>&-; ` +
	`while [ "$__vfsmount_n" -gt 0 ]; do wait 2>/dev/null || :; __vfsmount_jobs; [ "$__vfsmount_n" -gt 0 ] || break; sleep 0.5 2>/dev/null || break; done; ` +
	`exit $__vfsmount_rc' EXIT; `

// start runs spec under bubblewrap and returns at once.
func (r *shellRunner) start(spec procSpec) (*process, error) {
	trap := jobTrap
	if spec.tty {
		// A terminal's output cannot be drained at the report: the
		// command ends with its process, and its jobs with it.
		trap = cwdTrap
	}
	argv := append(append([]string{}, spec.shell...), trap+spec.command)
	// Without a terminal the command gets --new-session (no controlling
	// terminal, against TIOCSTI injection into the caller's). With one,
	// the terminal is ours and private, and it must stay the command's
	// controlling terminal.
	cmd := exec.Command(r.bwrap, r.argv(spec.names, spec.cwd, argv, !spec.tty)...)
	sideR, sideW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("shell: %v", err)
	}
	cmd.ExtraFiles = []*os.File{sideW} // fd 3
	cmd.WaitDelay = time.Second
	p := &process{cmdline: spec.command, startDir: spec.cwd, tty: spec.tty, cmd: cmd, side: sideR,
		ended: make(chan struct{}), done: make(chan struct{})}
	var tty *os.File
	var writeEnds []*os.File // the children's ends of the output pipes
	closeAll := func() {
		sideR.Close()
		sideW.Close()
		for _, f := range writeEnds {
			f.Close()
		}
		for _, o := range p.outs {
			o.r.Close()
		}
	}
	if spec.tty {
		p.ptmx, tty, err = pty.Open()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("shell: cannot open a terminal: %v", err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// A session of its own with the terminal as its controlling
		// one; its process group is the session's, so the kill below
		// reaches everything.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	} else {
		p.after = spec.after
		if p.after == nil {
			p.after = &capWriter{}
		}
		cmd.Stdin = nil
		dsts := []io.Writer{spec.out}
		if spec.errOut != nil {
			dsts = append(dsts, spec.errOut)
		}
		for _, dst := range dsts {
			o, w, err := newOutPipe(dst)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("shell: %v", err)
			}
			p.outs = append(p.outs, o)
			writeEnds = append(writeEnds, w)
		}
		cmd.Stdout, cmd.Stderr = writeEnds[0], writeEnds[len(writeEnds)-1]
		// Its own process group, so a kill reaches everything it
		// started; bwrap's pid namespace takes the rest down with its
		// init.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		if tty != nil {
			tty.Close()
			p.ptmx.Close()
		}
		return nil, fmt.Errorf("shell: cannot start bubblewrap: %v", err)
	}
	sideW.Close()
	for _, f := range writeEnds {
		f.Close()
	}
	p.started = time.Now()
	p.used = p.started
	for _, o := range p.outs {
		go o.copy()
	}
	var copied chan struct{}
	if tty != nil {
		tty.Close()
		copied = make(chan struct{})
		go func() {
			// EIO is how a pty's master reads the end of its slave.
			_, _ = io.Copy(spec.out, p.ptmx)
			close(copied)
		}()
	}
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		dir, rc, jobs, ok := readReport(p.side)
		if !ok || spec.tty {
			// No report (the trap did not run), or a terminal's: the
			// command ends with its process.
			return
		}
		p.finalDir = dir
		if jobs == 0 {
			// The shell exits at once, with rc: the command ends
			// with the process.
			return
		}
		p.exitCode, p.jobs = rc, jobs
		p.end()
	}()
	go func() {
		err := cmd.Wait()
		if copied != nil {
			select {
			case <-copied:
			case <-time.After(time.Second):
				// A child kept the terminal open after the shell exited;
				// what it writes later is not this command's output.
			}
			p.ptmx.Close()
		}
		// The process is gone, and the namespace with it: whatever held
		// the pipes has closed them, and the report's reader reads on to
		// their end. Closing its end first would lose a report it had
		// not read yet (a loaded machine: the session's cd forgotten); it
		// is closed only if a writer outlived the namespace.
		for _, o := range p.outs {
			o.wait(time.Second)
		}
		select {
		case <-reported:
		case <-time.After(time.Second):
		}
		p.side.Close()
		<-reported
		p.waitErr = err
		p.endWith(cmd.ProcessState)
		close(p.done)
	}()
	return p, nil
}

// end marks the command ended: the output the shell wrote before its
// report is drained to its destination, and what follows goes to after.
func (p *process) end() {
	p.endOnce.Do(p.cut)
}

// cut switches the output to after and closes ended.
func (p *process) cut() {
	p.mu.Lock()
	p.cutting = true
	after := p.after
	p.mu.Unlock()
	for _, o := range p.outs {
		o.cut(after)
	}
	close(p.ended)
}

// redirectAfter sends what the jobs print after the command's end to w
// instead, when the command has not ended yet; it reports whether it did.
func (p *process) redirectAfter(w io.Writer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutting {
		return false
	}
	if p.outs != nil {
		p.after = w
	}
	return true
}

// endWith ends the command with the process's exit status, unless the
// shell reported its own first.
func (p *process) endWith(st *os.ProcessState) {
	p.endOnce.Do(func() {
		p.exitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.signaled = 128 + int(ws.Signal())
		}
		p.cut()
	})
}

// startRemote runs spec on the machine of the remote mount rs, in its
// directory rel: the same shell and directory trap, the side channel
// being a pipe there whose content comes back with the exit.
func (r *shellRunner) startRemote(rs RemoteShell, rel string, spec procSpec) (*process, error) {
	argv := append(append([]string{}, spec.shell...), cwdTrap+spec.command)
	errOut := spec.errOut
	if errOut == nil {
		errOut = spec.out
	}
	proc, err := rs.Runner.StartCommand(context.Background(), mounts.Command{
		Argv: argv, Dir: rel, Root: rs.Prefix, Stdout: spec.out, Stderr: errOut, DirFD3: true,
		Env: append([]string{"TERM=dumb"}, r.opts.Env...),
	})
	if err != nil {
		return nil, fmt.Errorf("shell: cannot start the command on %s: %v", rs.Source, err)
	}
	p := &process{cmdline: spec.command, startDir: spec.cwd, remote: proc, ended: make(chan struct{}), done: make(chan struct{})}
	p.started = time.Now()
	p.used = p.started
	go func() {
		status, final, err := proc.Wait()
		p.waitErr = err
		p.exitCode = status
		if status > 128 || err != nil {
			p.exitCode = -1
			if err == nil {
				p.signaled = status
			}
		}
		if strings.HasPrefix(final, "/") {
			p.finalDir = final
		}
		close(p.ended)
		close(p.done)
	}()
	return p, nil
}

// readReport reads the report the trap writes on fd 3: the shell's final
// directory, its exit status and the number of jobs left running, each
// NUL-terminated. It returns at the
// report, not at the end of the pipe, which the jobs the command left
// running keep open; ok is false when the pipe ended without a whole
// report (the trap did not run).
func readReport(f *os.File) (dir string, rc, jobs int, ok bool) {
	var b []byte
	buf := make([]byte, 4096)
	for len(b) < 64<<10 {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if fields := bytes.Split(b, []byte{0}); len(fields) >= 4 {
			rc, err1 := strconv.Atoi(string(fields[1]))
			jobs, err2 := strconv.Atoi(string(fields[2]))
			if err1 != nil || err2 != nil || !bytes.HasPrefix(fields[0], []byte("/")) {
				return "", 0, 0, false
			}
			return string(fields[0]), rc, jobs, true
		}
		if err != nil {
			break
		}
	}
	return "", 0, 0, false
}

// wait waits for the command to end, for at most d or until ctx is done;
// it reports whether the command has ended.
func (p *process) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ended:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return p.exited()
}

// exited reports whether the command has ended (jobs it left may still
// run: see gone).
func (p *process) exited() bool {
	select {
	case <-p.ended:
		return true
	default:
		return false
	}
}

// gone reports whether the process and every job it left have exited.
func (p *process) gone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// running reports whether the command, or a job it left, still runs.
func (p *process) running() bool {
	return !p.exited() || (p.jobs > 0 && !p.gone())
}

// stop kills the process group, says why, and waits for the exit.
func (p *process) stop(why string) {
	p.mu.Lock()
	if p.killed == "" {
		p.killed = why
	}
	p.mu.Unlock()
	p.kill()
	<-p.done
}

// kill sends SIGKILL to the process group without waiting.
func (p *process) kill() {
	if p.gone() {
		return
	}
	if p.remote != nil {
		_ = p.remote.Kill()
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// whyKilled is the reason given to stop, "" when the process ended by
// itself.
func (p *process) whyKilled() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// write sends input to the process's terminal.
func (p *process) write(b []byte) error {
	if p.ptmx == nil {
		return errors.New("stdin is closed")
	}
	_, err := p.ptmx.Write(b)
	return err
}

func (p *process) touch() {
	p.mu.Lock()
	p.used = time.Now()
	p.mu.Unlock()
}

func (p *process) lastUsed() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// exitOf is the exit status codex-rs reports: 128+N for a signal.
func exitOf(p *process) int {
	if p.signaled != 0 {
		return p.signaled
	}
	return p.exitCode
}

// outBuf collects a process's merged output between two reads, keeping its
// head and tail when it grows past its cap (what lies between is counted),
// as Codex's head/tail buffer does. Safe for concurrent use.
type outBuf struct {
	mu      sync.Mutex
	cap     int
	head    []byte
	tail    []byte
	dropped int
}

func newOutBuf(cap int) *outBuf { return &outBuf{cap: cap} }

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	half := o.cap / 2
	if room := half - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	o.tail = append(o.tail, p...)
	if over := len(o.tail) - (o.cap - half); over > 0 {
		o.dropped += over
		o.tail = append(o.tail[:0], o.tail[over:]...)
	}
	return n, nil
}

// drain returns what was written since the last drain and empties the
// buffer; a middle that did not fit is a one-line note.
func (o *outBuf) drain() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s string
	if o.dropped > 0 {
		s = fmt.Sprintf("%s\n… [%d bytes dropped: more output than %d bytes piled up between two reads] …\n%s", o.head, o.dropped, o.cap, o.tail)
	} else {
		s = string(o.head) + string(o.tail)
	}
	o.head, o.tail, o.dropped = nil, nil, 0
	return s
}

// capWriter keeps the first and the last half of the cap and counts the
// rest, so a long build log still shows both its start and its error.
type capWriter struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte
	total int
	limit int // bytes kept; 0 is shellOutputCap
}

func (c *capWriter) max() int {
	if c.limit > 0 {
		return c.limit
	}
	return shellOutputCap
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n0 := len(p)
	c.total += n0
	half := c.max() / 2
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
	if c.total <= c.max() {
		return string(c.head) + string(c.tail)
	}
	tail := c.tail
	if len(tail) > c.max()/2 {
		tail = tail[len(tail)-c.max()/2:]
	}
	cut := c.total - len(c.head) - len(tail)
	return fmt.Sprintf("%s\n… [%d bytes truncated; output is capped at %d] …\n%s", c.head, cut, c.max(), tail)
}

// size is how many bytes were written, kept or not.
func (c *capWriter) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
