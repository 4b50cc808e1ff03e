package peer

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

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
func (s *server) exec(id uint64, x *wire.Exec) error {
	if s.opts.Shell == nil || s.opts.Dir == "" {
		return mounts.PathErr("exec", ".", errors.ErrUnsupported)
	}
	if x == nil || len(x.Argv) == 0 {
		return mounts.PathErr("exec", ".", fs.ErrInvalid)
	}
	if x.Dir == "" {
		x.Dir = "."
	}
	if err := mounts.CheckPath("exec", x.Dir); err != nil {
		return err
	}
	s.mu.Lock()
	_, taken := s.execs[id]
	s.mu.Unlock()
	if id == 0 || taken {
		return mounts.PathErr("exec", x.Dir, fs.ErrExist)
	}
	var stdin io.Reader = eofReader{}
	var pw *io.PipeWriter
	if x.Stdin {
		stdin, pw = io.Pipe()
	}
	out := &eventWriter{s: s, id: id, kind: wire.EventStdout}
	errw := &eventWriter{s: s, id: id, kind: wire.EventStderr}
	p, err := s.opts.Shell.Start(s.ctx, x, stdin, out, errw)
	if err != nil {
		return mounts.PathErr("exec", x.Dir, err)
	}
	s.mu.Lock()
	s.execs[id] = &execution{p: p, stdin: pw}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		status, fd3, rooted := p.Wait()
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
		// The exit comes after the last output: the writers are done
		// once Wait returned, and send keeps the order of its calls.
		ev := wire.Event{Kind: wire.EventExit, ExecID: id, Status: status, Data: fd3}
		if rooted {
			ev.Name = "rooted"
		}
		s.send(&wire.Response{Events: []wire.Event{ev}})
	}()
	return nil
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
	// Back, when set, gives the rest of the workspace for a rooted
	// command: directories (the daemon's tree, mounted here) to bind at
	// /NAME, by NAME. An error leaves them out; the command still runs.
	Back func() (map[string]string, error)
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
	if h.Bwrap != "" && x.Root != "" && filepath.IsAbs(x.Root) && x.Root != "/" {
		var binds map[string]string
		if h.Back != nil {
			binds, _ = h.Back()
		}
		if b, err := rootedArgs(h.Dir, x.Root, filepath.Join(x.Root, filepath.FromSlash(x.Dir)), binds); err == nil {
			argv = append(append([]string{h.Bwrap}, b...), argv...)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), x.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A command in the background that keeps the output open does not
	// hold the answer past a second after the shell's end.
	cmd.WaitDelay = time.Second
	p := &hostProcess{cmd: cmd, rooted: len(argv) != len(x.Argv)}
	var side *os.File
	if x.DirFD3 {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{w}
		side = w
		p.side = r
	}
	err := cmd.Start()
	if side != nil {
		side.Close()
	}
	if err != nil {
		if p.side != nil {
			p.side.Close()
		}
		return nil, err
	}
	if !p.rooted {
		p.dir, p.root = h.Dir, x.Root
	}
	return p, nil
}

// rootedArgs are bwrap's arguments for a namespace that is this machine's
// root with dir also at root: each top-level entry of / bound at its
// place (the one root would shadow left out), then the workspace's other
// top-level directories (binds, by name: they shadow this machine's of
// the same name), dir bound at root. Nothing is created on this
// machine's file systems.
func rootedArgs(dir, root, chdir string, binds map[string]string) ([]string, error) {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	top := strings.SplitN(strings.TrimPrefix(root, "/"), "/", 2)[0]
	var a []string
	for _, e := range ents {
		p := "/" + e.Name()
		switch {
		case e.Name() == top, binds[e.Name()] != "":
		case e.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				continue
			}
			a = append(a, "--symlink", t, p)
		case e.IsDir():
			a = append(a, "--dev-bind", p, p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(binds)) {
		if name != top {
			a = append(a, "--bind", binds[name], "/"+name)
		}
	}
	return append(a, "--bind", dir, root, "--chdir", chdir, "--die-with-parent", "--"), nil
}

type hostProcess struct {
	cmd    *exec.Cmd
	side   *os.File // read end of fd 3, or nil
	rooted bool
	// dir and root map a final directory below the served directory to
	// its workspace path, when the command saw the directory at its own
	// path.
	dir, root string
}

func (p *hostProcess) Wait() (int, []byte, bool) {
	err := p.cmd.Wait()
	var fd3 []byte
	if p.side != nil {
		_ = p.side.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		fd3, _ = io.ReadAll(io.LimitReader(p.side, 64<<10))
		p.side.Close()
		fd3 = p.mapDir(fd3)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), fd3, p.rooted
		}
		return ee.ExitCode(), fd3, p.rooted
	case err != nil && p.cmd.ProcessState != nil:
		return p.cmd.ProcessState.ExitCode(), fd3, p.rooted // WaitDelay: output left open
	case err != nil:
		return 127, fd3, p.rooted
	}
	return 0, fd3, p.rooted
}

// mapDir turns a final directory (NUL-terminated, as the shell's trap
// writes it) below the served directory into its path under Root.
func (p *hostProcess) mapDir(b []byte) []byte {
	d := strings.TrimRight(string(b), "\x00")
	if p.root == "" || p.dir == "" {
		return []byte(d)
	}
	switch {
	case d == p.dir:
		return []byte(p.root)
	case strings.HasPrefix(d, p.dir+"/"):
		return []byte(p.root + d[len(p.dir):])
	}
	return nil // outside the served directory
}

func (p *hostProcess) Signal(sig int) error {
	// The whole group: a shell's children go with it.
	return syscall.Kill(-p.cmd.Process.Pid, syscall.Signal(sig))
}
