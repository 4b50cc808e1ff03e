package remotefs

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

var (
	_ mounts.CommandFS      = (*ReadOnlyFS)(nil)
	_ mounts.ChangeNotifier = (*ReadOnlyFS)(nil)
)

// remoteExec is a command running on the peer: its output and exit come
// as events.
type remoteExec struct {
	s              *session
	id             uint64
	stdout, stderr io.Writer
	mu             sync.Mutex // serialises writes to the writers
	done           chan struct{}
	status         int
	finalDir       string
	rooted         bool
	err            error
}

// StartCommand implements mounts.CommandFS: the command runs on the
// peer's machine, in the mount's directory c.Dir, seeing it at c.Root
// where the peer can arrange that (bwrap there), and is killed when the
// link is lost.
func (f *ReadOnlyFS) StartCommand(ctx context.Context, c mounts.Command) (mounts.Process, error) {
	if err := mounts.CheckPath("exec", c.Dir); err != nil {
		return nil, err
	}
	f.barrier() // the command sees every write made before it
	s, err := f.session(ctx)
	if err != nil {
		return nil, mounts.PathErr("exec", c.Dir, err)
	}
	s.waitBack(f.opts.Timeout) // the command may connect back for the rest of the workspace
	x := &remoteExec{s: s, stdout: c.Stdout, stderr: c.Stderr, done: make(chan struct{})}
	if x.stderr == nil {
		x.stderr = x.stdout
	}
	f.mu.Lock()
	f.execID++
	x.id = f.execID
	if f.execs == nil {
		f.execs = map[uint64]*remoteExec{}
	}
	f.execs[x.id] = x
	f.mu.Unlock()
	resp, err := f.callOn(ctx, s, &wire.Request{Op: wire.OpExec, ExecID: x.id, Name: c.Dir,
		Exec: &wire.Exec{Argv: c.Argv, Dir: c.Dir, Env: c.Env, Root: c.Root, DirFD3: c.DirFD3}})
	if err == nil && resp.Err != nil {
		err = resp.Err.Err("exec", c.Dir)
	} else if err != nil {
		err = mounts.PathErr("exec", c.Dir, err)
	}
	if err != nil {
		f.mu.Lock()
		delete(f.execs, x.id)
		f.mu.Unlock()
		return nil, err
	}
	go func() {
		// A lost link ends the command as far as its caller knows: the
		// peer kills what it ran when its stream ends.
		select {
		case <-x.done:
		case <-s.dead:
			f.finishExec(x.id, -1, "", false, &linkError{what: "the link to " + f.opts.Source + " was lost while the command ran", cause: s.alive()})
		}
	}()
	return x, nil
}

// execEvent delivers a command's output or exit.
func (f *ReadOnlyFS) execEvent(ev wire.Event) {
	f.mu.Lock()
	x := f.execs[ev.ExecID]
	f.mu.Unlock()
	if x == nil {
		return
	}
	switch ev.Kind {
	case wire.EventStdout:
		x.write(x.stdout, ev.Data)
	case wire.EventStderr:
		x.write(x.stderr, ev.Data)
	case wire.EventExit:
		f.finishExec(ev.ExecID, ev.Status, string(ev.Data), ev.Name == "rooted", nil)
	}
}

func (f *ReadOnlyFS) finishExec(id uint64, status int, dir string, rooted bool, err error) {
	f.mu.Lock()
	x := f.execs[id]
	delete(f.execs, id)
	f.mu.Unlock()
	if x == nil {
		return
	}
	x.status, x.finalDir, x.rooted, x.err = status, dir, rooted, err
	close(x.done)
}

func (x *remoteExec) write(w io.Writer, p []byte) {
	if w == nil {
		return
	}
	x.mu.Lock()
	_, _ = w.Write(p)
	x.mu.Unlock()
}

// Wait implements mounts.Process.
func (x *remoteExec) Wait() (int, string, error) {
	<-x.done
	return x.status, x.finalDir, x.err
}

// Kill implements mounts.Process: SIGKILL to the command's process group
// on the peer.
func (x *remoteExec) Kill() error {
	select {
	case <-x.done:
		return nil
	default:
	}
	if err := x.s.post(&wire.Request{Op: wire.OpExecSignal, ExecID: x.id, Signal: int(syscall.SIGKILL)}); err != nil {
		return errors.New("the link is lost; the peer kills the command itself")
	}
	return nil
}
