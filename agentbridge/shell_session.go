package agentbridge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Session is what one caller of the tool face keeps from call to call: the
// shell's current directory, which relative paths of every verb resolve
// against and which `cd` in a shell call moves, and the processes a shell
// call left running (codex's exec_command and write_stdin).
//
// A session is what the transport says it is: package jsonrpc opens one
// per connection, package mcpserver one per MCP session, and a call that
// carries none ([WithSession]) gets a session of its own that ends with
// it (one `vfsmount call`). Safe for concurrent calls: parallel calls of
// one session share its directory, and the last shell call to end sets it.
type Session struct {
	w *Workspace
	// oneCall marks the session [Workspace.Call] makes for a call that
	// brought none: it ends with the call, so a process cannot outlive it.
	oneCall bool

	mu     sync.Mutex
	cwd    string // workspace path; "" is the default (Workspace.defaultDir)
	procs  map[int]*process
	nextID int
	closed bool
}

// defaultMaxSessionProcs bounds the processes one session keeps running
// (Workspace.maxSessionProcs); the least recently used one is stopped to
// start another, as Codex prunes its own.
const defaultMaxSessionProcs = 16

// NewSession opens a session of this workspace. Close it when the caller
// goes away; [Workspace.Close] closes those still open.
func (w *Workspace) NewSession() *Session {
	return w.openSession(false)
}

func (w *Workspace) openSession(oneCall bool) *Session {
	s := &Session{w: w, oneCall: oneCall, procs: map[int]*process{}, nextID: 1000}
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	if w.sessions == nil {
		w.sessions = map[*Session]struct{}{}
	}
	w.sessions[s] = struct{}{}
	return s
}

// Close stops every process the session keeps running and forgets it. A
// closed session still serves calls, as a session of one call each.
func (s *Session) Close() error {
	s.mu.Lock()
	procs := s.procs
	s.procs = map[int]*process{}
	s.closed = true
	s.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		<-p.done
	}
	s.w.sessMu.Lock()
	delete(s.w.sessions, s)
	s.w.sessMu.Unlock()
	return nil
}

// Dir is the session's current directory as a workspace path.
func (s *Session) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd == "" {
		return s.w.defaultDir()
	}
	return s.cwd
}

// setDir moves the session to dir, a workspace path.
func (s *Session) setDir(dir string) {
	s.mu.Lock()
	s.cwd = dir
	s.mu.Unlock()
}

// keeps reports whether a process may outlive the call that started it.
func (s *Session) keeps() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.oneCall && !s.closed
}

// add keeps p running under a new id; when the session is full, the least
// recently used process is stopped first and returned.
func (s *Session) add(p *process) (id int, pruned *process, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.oneCall {
		return 0, nil, errors.New("this session keeps no processes")
	}
	if len(s.procs) >= s.w.maxSessionProcs {
		ids := make([]int, 0, len(s.procs))
		for id := range s.procs {
			ids = append(ids, id)
		}
		// An ended process (a saved output kept for Read) goes before a
		// running one (or one whose jobs run), then the least recently
		// used.
		sort.Slice(ids, func(i, j int) bool {
			pi, pj := s.procs[ids[i]], s.procs[ids[j]]
			if pi.running() != pj.running() {
				return pj.running()
			}
			return pi.lastUsed().Before(pj.lastUsed())
		})
		pruned = s.procs[ids[0]]
		delete(s.procs, ids[0])
	}
	id = s.nextID
	s.nextID++
	s.procs[id] = p
	p.id = id
	return id, pruned, nil
}

// bound stops p when it has run for the longest a shell call may
// (Limits.MaxShellTimeout), so a session's processes end by themselves.
func (w *Workspace) bound(p *process) {
	w.boundFor(p, w.limits.MaxShellTimeout-time.Since(p.started))
}

// boundFor stops p when it has run for d more.
func (w *Workspace) boundFor(p *process, d time.Duration) {
	total := time.Since(p.started) + d
	t := time.AfterFunc(d, func() {
		p.stop(fmt.Sprintf("it ran for %s, the longest a command may", total.Round(time.Second)))
	})
	go func() {
		<-p.done
		t.Stop()
	}()
}

// proc returns the running process id, if the session has it.
func (s *Session) proc(id int) (*process, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[id]
	return p, ok
}

// drop forgets process id (it ended).
func (s *Session) drop(id int) {
	s.mu.Lock()
	delete(s.procs, id)
	s.mu.Unlock()
}

// running lists the ids of the session's processes, for tests and errors.
func (s *Session) running() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int, 0, len(s.procs))
	for id := range s.procs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

type sessionKey struct{}

// WithSession returns a context whose calls belong to s: a transport puts
// its session here before [Workspace.Call].
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

func sessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// Close ends every session still open, stopping the processes they keep
// running. Call it before taking the kernel face down: a process left
// running keeps the mount busy.
func (w *Workspace) Close() error {
	w.sessMu.Lock()
	open := make([]*Session, 0, len(w.sessions))
	for s := range w.sessions {
		open = append(open, s)
	}
	w.sessMu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// defaultDir is where a session starts: the first writable mount, else
// the root (TOOLS.md).
func (w *Workspace) defaultDir() string {
	if wp := w.writablePrefixes(); len(wp) > 0 {
		return wp[0]
	}
	return "/"
}

// sessionDir is the session's directory as a name of the workspace FS.
func sessionDir(s *Session) string {
	if s == nil {
		return "."
	}
	return mounts.NameOf(s.Dir())
}
