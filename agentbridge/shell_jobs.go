package agentbridge

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Jobs: what a command leaves running when it returns (`server &`,
// `nohup build >log &`, `setsid worker &`). As in a harness's terminal,
// they outlive the call: the call ends when the command's shell does
// (jobTrap in shell_process.go), and the caller's session keeps the
// process under an id until they end, with their later output readable;
// the session stops them when it ends ([Session.Close]), and a call that
// keeps no session stops them before it returns.

// outPipe copies one output pipe of a command to its destination, and at
// the command's end switches the destination without losing or
// misplacing a byte: the shell wrote its output before its report, so
// when the report has come, that output is in the pipe or already copied.
// cut drains what is in the pipe to the old destination under the same
// lock the copier writes under, then switches; what the jobs write later
// goes to the new one.
type outPipe struct {
	r    *os.File
	rc   syscall.RawConn
	mu   sync.Mutex
	dst  io.Writer
	done chan struct{} // closed when the copy has reached the pipe's end
}

// newOutPipe makes a pipe whose read end is copied to dst; w is the end
// the command gets.
func newOutPipe(dst io.Writer) (o *outPipe, w *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	rc, err := r.SyscallConn()
	if err != nil {
		r.Close()
		w.Close()
		return nil, nil, err
	}
	return &outPipe{r: r, rc: rc, dst: dst, done: make(chan struct{})}, w, nil
}

// copy copies the pipe to its destination until its end.
func (o *outPipe) copy() {
	defer close(o.done)
	buf := make([]byte, 32<<10)
	for {
		var n int
		var rerr error
		err := o.rc.Read(func(fd uintptr) bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			n, rerr = syscall.Read(int(fd), buf)
			if errors.Is(rerr, syscall.EAGAIN) {
				return false // wait until it is readable
			}
			if n > 0 {
				_, _ = o.dst.Write(buf[:n])
			}
			return true
		})
		switch {
		case errors.Is(rerr, syscall.EINTR):
			continue
		case err != nil || rerr != nil || n <= 0:
			return
		}
	}
}

// cut drains what the pipe holds to the current destination and sends
// what comes after to dst.
func (o *outPipe) cut(dst io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf := make([]byte, 32<<10)
	_ = o.rc.Control(func(fd uintptr) {
		for {
			n, err := syscall.Read(int(fd), buf)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if n <= 0 {
				return
			}
			_, _ = o.dst.Write(buf[:n])
		}
	})
	o.dst = dst
}

// wait waits for the copy to reach the pipe's end, for at most d (a
// process outside the namespace that holds the pipe, which cannot be one
// the command started), then closes the pipe.
func (o *outPipe) wait(d time.Duration) {
	select {
	case <-o.done:
	case <-time.After(d):
	}
	o.r.Close()
}

// keepJobs keeps p in the session s while the jobs its ended command left
// run, so they survive the call, stay listed and readable, and end with
// the session. It returns the id they run under (0: none run), or a note
// when they had to be stopped.
func (w *Workspace) keepJobs(s *Session, p *process) (id int, note string) {
	if !p.exited() || !p.running() {
		return 0, ""
	}
	if s == nil || !s.keeps() {
		p.stop("still running at the end of a call that keeps no session")
		return 0, "jobs the command left running were stopped: this call keeps no session (a JSON-RPC connection or an MCP session does)"
	}
	if c, ok := p.after.(*capWriter); ok && p.log == nil {
		p.log = c
	}
	id, pruned, err := s.add(p)
	if err != nil {
		p.stop(err.Error())
		return 0, "jobs the command left running were stopped: " + err.Error()
	}
	if pruned != nil {
		pruned.stop("the session had too many processes")
	}
	return id, ""
}

// taskDir is where read (every dialect's) finds a background task's
// output file: /.vfsmount/tasks/ID.output, the task's merged output so far
// (head and tail kept past the cap), read from the session that runs it.
// A task is a Claude Code background task, or the jobs a command left
// running (keepJobs).
const taskDir = "/.vfsmount/tasks/"

func taskPath(id int) string { return taskDir + strconv.Itoa(id) + ".output" }

// taskOutputFile is the output of the task the path names, when it
// names one of the session's tasks.
func taskOutputFile(a *args, given string) (string, bool, error) {
	if !strings.HasPrefix(given, taskDir) {
		return "", false, nil
	}
	id := strings.TrimSuffix(strings.TrimPrefix(given, taskDir), ".output")
	p, err := claudeTask(a, id)
	if err != nil {
		return "", true, err
	}
	p.touch()
	return p.log.String(), true, nil
}
