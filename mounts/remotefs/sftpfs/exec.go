package sftpfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/vfsmount/vfsmount/mounts"
)

// StartCommand implements mounts.CommandFS over ssh exec: the command
// runs on the remote machine, in the directory c.Dir of the mount (at
// its own path there: nothing arranges for it to be seen at c.Root),
// with c.Env added, its output streamed. Kill sends SIGKILL to its
// process group (OpenSSH signals the session's group). With c.DirFD3,
// fd 3 is a file in the remote user's temporary directory, read and
// removed by a second exec once the command ended, and its final
// directory is reported under c.Root.
//
// A command still running when its connection closes is killed on the
// remote side with its process group, as the peer's are: a watcher there
// reads the session's input, which this end holds open until the command
// ends, and kills the group at its end of file. The server sees a
// connection close at once when this process or its socket goes; a link
// cut silently is seen only when the server's keepalive (sshd's
// ClientAliveInterval) gives up on it. Its caller learns of the loss at
// once either way.
func (f *ReadOnlyFS) StartCommand(ctx context.Context, cmd mounts.Command) (mounts.Process, error) {
	if err := mounts.CheckPath("exec", cmd.Dir); err != nil {
		return nil, err
	}
	if len(cmd.Argv) == 0 {
		return nil, mounts.PathErr("exec", cmd.Dir, errors.New("no command"))
	}
	var env []string
	for _, e := range cmd.Env {
		if !envName.MatchString(e) {
			return nil, mounts.PathErr("exec", cmd.Dir, fmt.Errorf("bad environment entry %q", e))
		}
		env = append(env, e)
	}
	var tok [12]byte
	_, _ = rand.Read(tok[:])
	base := `"${TMPDIR:-/tmp}/.vfsmount-exec-` + hex.EncodeToString(tok[:])
	p := &process{f: f, root: cmd.Root, done: make(chan struct{}), pidFile: base + `.pid"`, dirFD3: cmd.DirFD3}
	side := "/dev/null"
	if cmd.DirFD3 {
		side = base + `.cwd"`
	}
	p.side = side
	var mu sync.Mutex
	out := &lockedWriter{w: cmd.Stdout, mu: &mu}
	errw := out
	if cmd.Stderr != nil {
		errw = &lockedWriter{w: cmd.Stderr, mu: &mu}
	}
	err := f.do(ctx, "exec", cmd.Dir, func(c *conn) error {
		dir, err := c.dirOf(cmd.Dir)
		if err != nil {
			return err
		}
		p.c, p.dir = c, c.root
		s, err := c.ssh.NewSession()
		if err != nil {
			return err
		}
		s.Stdout, s.Stderr = out, errw
		// Held open until the command ends: its end of file is the
		// connection's (see the watcher below).
		in, err := s.StdinPipe()
		if err != nil {
			s.Close()
			return err
		}
		p.in = in
		// The shell is the session's leader (sshd made the session),
		// so its pid names the process group Kill ends; it execs the
		// command, which keeps it. The watcher, in that group, reads
		// the session's input to its end and then kills the group.
		var b strings.Builder
		b.WriteString("(umask 077; echo $$ >" + p.pidFile + "; : >" + p.side + ") || exit 126\n")
		b.WriteString("cd " + shellQuote(dir) + " || exit 126\n")
		for _, e := range env {
			b.WriteString("export " + shellQuote(e) + "\n")
		}
		// (Through fd 4: an asynchronous list's input is /dev/null.)
		b.WriteString("exec 4<&0\n")
		b.WriteString("(while read -r _; do :; done; kill -s KILL -- -$$) <&4 4<&- >/dev/null 2>&1 3>&- &\n")
		b.WriteString("exec")
		for _, a := range cmd.Argv {
			b.WriteString(" " + shellQuote(a))
		}
		b.WriteString(" </dev/null 4<&- 3>" + p.side)
		if err := s.Start("sh -c " + shellQuote(b.String())); err != nil {
			s.Close()
			return err
		}
		p.s = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	go p.wait()
	return p, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// lockedWriter serialises the writes of the session's stdout and stderr
// copiers (one writer may take both).
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	if l.w == nil {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
	return len(p), nil
}

// process is a command started by StartCommand.
type process struct {
	f       *ReadOnlyFS
	c       *conn
	s       *ssh.Session
	in      io.WriteCloser // the session's input, closed once the command ended
	side    string         // the fd 3 file, as a shell word (/dev/null without DirFD3)
	pidFile string         // where the shell left its pid, as a shell word
	dirFD3  bool
	dir     string // the served directory, resolved
	root    string

	done     chan struct{}
	status   int
	finalDir string
	err      error
	killed   bool
	mu       sync.Mutex
}

func (p *process) wait() {
	defer close(p.done)
	ended := make(chan error, 1)
	go func() { ended <- p.s.Wait() }()
	defer p.in.Close()
	var err error
	select {
	case err = <-ended:
	case <-p.c.dead:
		p.s.Close()
		p.status = -1
		p.err = &linkError{what: "the link to " + p.f.opts.Source + " was lost while the command ran", cause: p.c.err}
		return
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		p.status = ee.ExitStatus()
		if ee.Signal() != "" && p.status < 128 {
			p.status = 128 + 9
		}
	default:
		p.mu.Lock()
		killed := p.killed
		p.mu.Unlock()
		switch {
		case p.c.lost(p.f.opts.Timeout):
			p.status = -1
			p.err = &linkError{what: "the link to " + p.f.opts.Source + " was lost while the command ran", cause: p.c.err}
			return
		case killed:
			p.status = 128 + 9
		default:
			p.status = -1
			p.err = fmt.Errorf("the command's end was not reported: %w", err)
			return
		}
	}
	p.s.Close()
	p.finalDir = p.readSide()
}

// readSide reads the final directory the command left in its fd 3 file,
// mapped to its path under Root, and removes the command's files.
func (p *process) readSide() string {
	var out strings.Builder
	err := p.f.on(context.Background(), p.c, "exec", ".", func(c *conn) error {
		s, err := c.ssh.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		s.Stdout = &limitWriter{b: &out, n: 64 << 10}
		script := "rm -f " + p.pidFile
		if p.dirFD3 {
			script = "cat " + p.side + " 2>/dev/null; rm -f " + p.side + " " + p.pidFile
		}
		return s.Run("sh -c " + shellQuote(script))
	})
	if err != nil || !p.dirFD3 {
		return ""
	}
	d := out.String()
	if !strings.HasSuffix(d, "\x00") {
		return "" // only a complete report counts
	}
	d = strings.TrimSuffix(d, "\x00")
	if i := strings.LastIndexByte(d, 0); i >= 0 {
		d = d[i+1:]
	}
	if p.root == "" {
		return ""
	}
	switch {
	case d == p.dir:
		return p.root
	case strings.HasPrefix(d, p.dir+"/"):
		return strings.TrimSuffix(p.root, "/") + d[len(p.dir):]
	case p.dir == "/" && strings.HasPrefix(d, "/"):
		return strings.TrimSuffix(p.root, "/") + d
	}
	return "" // outside the served directory
}

type limitWriter struct {
	b *strings.Builder
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Wait implements mounts.Process.
func (p *process) Wait() (int, string, error) {
	<-p.done
	return p.status, p.finalDir, p.err
}

// Kill implements mounts.Process: SIGKILL to the command's process
// group (the session's, whose leader left its pid), by a second exec.
func (p *process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	return p.f.on(context.Background(), p.c, "kill", ".", func(c *conn) error {
		s, err := c.ssh.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		// The shell may not have said its pid yet, just started.
		return s.Run("sh -c " + shellQuote("i=0; while ! test -s "+p.pidFile+" && test $i -lt 100; do sleep 0.02; i=$((i+1)); done; "+
			"pid=$(cat "+p.pidFile+") && { kill -s KILL -- -$pid 2>/dev/null || kill -s KILL $pid; }"))
	})
}
