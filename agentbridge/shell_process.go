package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
// the shell's final directory to a pipe on fd 3 (the side channel), so a
// `cd` carries to the session without parsing the command. When the trap
// cannot run (the command replaced the shell with exec, set its own EXIT
// trap, or was killed) nothing is reported and the session's directory
// stays as it was.
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

	done     chan struct{} // closed when the process has exited
	exitCode int           // valid after done; -1 when killed by a signal
	signaled int           // valid after done: 128+signal when killed by one, else 0
	waitErr  error         // valid after done
	finalDir string        // valid after done: the shell's last $PWD, "" if unknown

	mu     sync.Mutex
	used   time.Time
	killed string // why it was killed, "" when it was not
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
}

// cwdTrap reports the shell's final directory on fd 3 and keeps its exit
// status. It is on the command's first line so bash's line numbers in
// error messages are the caller's.
const cwdTrap = `trap '__vfsmount_rc=$?; printf "%s\0" "$PWD" 2>/dev/null >&3; exit $__vfsmount_rc' EXIT; `

// start runs spec under bubblewrap and returns at once.
func (r *shellRunner) start(spec procSpec) (*process, error) {
	argv := append(append([]string{}, spec.shell...), cwdTrap+spec.command)
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
	p := &process{cmdline: spec.command, startDir: spec.cwd, tty: spec.tty, cmd: cmd, side: sideR, done: make(chan struct{})}
	var tty *os.File
	if spec.tty {
		p.ptmx, tty, err = pty.Open()
		if err != nil {
			sideR.Close()
			sideW.Close()
			return nil, fmt.Errorf("shell: cannot open a terminal: %v", err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// A session of its own with the terminal as its controlling
		// one; its process group is the session's, so the kill below
		// reaches everything.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	} else {
		cmd.Stdin = nil
		cmd.Stdout = spec.out
		cmd.Stderr = spec.errOut
		if spec.errOut == nil {
			cmd.Stderr = spec.out
		}
		// Its own process group, so a kill reaches everything it
		// started; bwrap's pid namespace takes the rest down with its
		// init.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		sideR.Close()
		sideW.Close()
		if tty != nil {
			tty.Close()
			p.ptmx.Close()
		}
		return nil, fmt.Errorf("shell: cannot start bubblewrap: %v", err)
	}
	sideW.Close()
	p.started = time.Now()
	p.used = p.started
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
		p.waitErr = err
		p.exitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.signaled = 128 + int(ws.Signal())
		}
		p.finalDir = readSide(p.side)
		p.side.Close()
		close(p.done)
	}()
	return p, nil
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
	p := &process{cmdline: spec.command, startDir: spec.cwd, remote: proc, done: make(chan struct{})}
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
		close(p.done)
	}()
	return p, nil
}

// readSide reads the final directory the trap wrote. The shell has exited,
// so what it wrote is in the pipe; the deadline is for a child that still
// holds the write end open.
func readSide(f *os.File) string {
	_ = f.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b []byte
	buf := make([]byte, 4096)
	for len(b) < 64<<10 {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	// Only a complete report counts: the last one, NUL-terminated.
	s := string(b)
	if !strings.HasSuffix(s, "\x00") {
		return ""
	}
	s = strings.TrimSuffix(s, "\x00")
	if i := strings.LastIndexByte(s, 0); i >= 0 {
		s = s[i+1:]
	}
	if !strings.HasPrefix(s, "/") {
		return ""
	}
	return s
}

// wait waits for the process to exit, for at most d or until ctx is done;
// it reports whether the process has exited.
func (p *process) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
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
	if p.exited() {
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
