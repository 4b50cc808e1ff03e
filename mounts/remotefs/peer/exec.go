package peer

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// execution is a command started by OpExec.
type execution struct {
	p     Process
	stdin *io.PipeWriter
}

// exec starts a command on this machine; its output and its end come back
// as events carrying its ID.
func (s *server) exec(x *wire.Exec) (uint64, error) {
	if s.opts.Shell == nil || s.opts.Dir == "" {
		return 0, mounts.PathErr("exec", ".", errors.ErrUnsupported)
	}
	if x == nil || len(x.Argv) == 0 {
		return 0, mounts.PathErr("exec", ".", fs.ErrInvalid)
	}
	if x.Dir == "" {
		x.Dir = "."
	}
	if err := mounts.CheckPath("exec", x.Dir); err != nil {
		return 0, err
	}
	id := s.next.Add(1)
	var stdin io.Reader = eofReader{}
	var pw *io.PipeWriter
	if x.Stdin {
		stdin, pw = io.Pipe()
	}
	out := &eventWriter{s: s, id: id, kind: wire.EventStdout}
	errw := &eventWriter{s: s, id: id, kind: wire.EventStderr}
	p, err := s.opts.Shell.Start(s.ctx, x, stdin, out, errw)
	if err != nil {
		return 0, mounts.PathErr("exec", x.Dir, err)
	}
	s.mu.Lock()
	s.execs[id] = &execution{p: p, stdin: pw}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		status := p.Wait()
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
		// The exit comes after the last output: both go through send, in
		// this order, from this goroutine's view; the writers are done
		// once Wait returned.
		s.send(&wire.Response{Events: []wire.Event{{Kind: wire.EventExit, ExecID: id, Status: status}}})
	}()
	return id, nil
}

// execControl feeds a command's stdin or signals it. Unknown IDs (a
// command that already ended) are ignored: there is no one to answer.
func (s *server) execControl(req wire.Request) {
	s.mu.Lock()
	x := s.execs[req.ExecID]
	s.mu.Unlock()
	if x == nil {
		return
	}
	switch req.Op {
	case wire.OpExecInput:
		if x.stdin == nil {
			return
		}
		if len(req.Data) > 0 {
			data := req.Data
			go func() { _, _ = x.stdin.Write(data) }() // never block the reader on a command
		}
		if req.EOF {
			x.stdin.Close()
		}
	case wire.OpExecSignal:
		_ = x.p.Signal(req.Signal)
	}
}

// stopExecs kills what is still running when the stream ends: a command
// outlives neither its daemon nor its link.
func (s *server) stopExecs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.execs {
		_ = x.p.Signal(int(syscall.SIGKILL))
		if x.stdin != nil {
			x.stdin.Close()
		}
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// eventWriter sends what a command writes as events.
type eventWriter struct {
	s    *server
	id   uint64
	kind wire.EventKind
}

func (w *eventWriter) Write(p []byte) (int, error) {
	data := append([]byte(nil), p...)
	w.s.send(&wire.Response{Events: []wire.Event{{Kind: w.kind, ExecID: w.id, Data: data}}})
	return len(p), nil
}

// HostShell runs commands with the host's shell in the served directory:
// argv as given, in its own process group (a signal reaches every process
// it started). Where bwrap is found and Exec.Root is set, the command runs
// in a mount namespace where the served directory is also at Root, so that
// the workspace's paths (/workspace/…) mean the same there as here.
type HostShell struct {
	// Dir is the served directory.
	Dir string
	// Bwrap is the bwrap binary; empty: commands see the directory only
	// at its own path.
	Bwrap string
}

// FindBwrap returns the bwrap on PATH, or "".
func FindBwrap() string {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return ""
	}
	return p
}

// Start implements Shell.
func (h HostShell) Start(ctx context.Context, x *wire.Exec, stdin io.Reader, stdout, stderr io.Writer) (Process, error) {
	dir := filepath.Join(h.Dir, filepath.FromSlash(x.Dir))
	argv := x.Argv
	if h.Bwrap != "" && x.Root != "" {
		inside := filepath.Join(x.Root, filepath.FromSlash(x.Dir))
		argv = append([]string{h.Bwrap, "--dev-bind", "/", "/", "--bind", h.Dir, x.Root,
			"--chdir", inside, "--die-with-parent", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), x.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &hostProcess{cmd: cmd}, nil
}

type hostProcess struct {
	cmd *exec.Cmd
}

func (p *hostProcess) Wait() int {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 127
	}
	return 0
}

func (p *hostProcess) Signal(sig int) error {
	// The whole group: a shell's children go with it.
	return syscall.Kill(-p.cmd.Process.Pid, syscall.Signal(sig))
}
