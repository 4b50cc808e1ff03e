// Package peer is the remote side of a remote mount: it serves one mount
// (a host directory, confined by package hostfs) and runs commands next to
// it, answering the requests of package wire that a daemon sends over one
// byte stream (`vfsmount peer DIR` on stdin and stdout).
//
// The peer never decides what may be read: the mount it is given does
// (hostfs refuses every name that would leave its root, whatever the
// request). The daemon's policy is applied in the daemon, on both faces.
package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// WholeFile is the size up to which an open for reading answers with the
// whole content, so that reading a small file costs one round trip.
const WholeFile = 256 << 10

// Options configure a peer.
type Options struct {
	// Dir is the host directory fsys serves, for the change stream
	// (inotify) and for commands. Empty: no change stream, no commands.
	Dir string
	// Build is this binary's version, sent in the hello.
	Build string
	// Logger receives what the peer does not answer (a broken stream).
	Logger *slog.Logger
	// Shell runs commands (OpExec); nil refuses them with ENOSYS.
	Shell Shell
}

// Shell starts a command for OpExec.
type Shell interface {
	Start(ctx context.Context, x *wire.Exec, stdin io.Reader, stdout, stderr io.Writer) (Process, error)
}

// Process is a started command.
type Process interface {
	// Wait returns the exit status (128+n for a signal), what the
	// command wrote to fd 3 (Exec.DirFD3), and whether it ran with the
	// directory at Exec.Root.
	Wait() (status int, fd3 []byte, rooted bool)
	Signal(sig int) error
}

// Serve answers requests from r on w until r ends or ctx is done. It
// writes its hello, reads the daemon's, and returns the error that ended
// the stream (nil at a clean end of input).
func Serve(ctx context.Context, r io.Reader, w io.Writer, fsys mounts.FS, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{ctx: ctx, fsys: fsys, opts: opts, codec: wire.NewCodec(r, w),
		handles: map[uint64]*handle{}, ordered: map[uint64]bool{}, opening: map[uint64]bool{}, failed: map[string]uint64{},
		execs: map[uint64]*execution{}, changeQ: newQueue()}
	s.prepareWatch() // while the hellos cross
	defer s.closeAll()
	// Both sides write their hello before reading the other's: on a
	// stream without a buffer that is two writes at once.
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(w, wire.Hello(opts.Build))
		wrote <- err
	}()
	if _, err := wire.ReadHello(r); err != nil {
		return err
	}
	if err := <-wrote; err != nil {
		return err
	}
	s.wg.Add(1)
	go s.applyChanges()
	for {
		var req wire.Request
		if err := s.codec.Recv(&req); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("peer: reading a request: %w", err)
		}
		s.dispatch(req)
	}
}

type server struct {
	ctx   context.Context
	fsys  mounts.FS
	opts  Options
	codec *wire.Codec

	mu      sync.Mutex
	handles map[uint64]*handle
	ordered map[uint64]bool // handles opened for writing: their requests go on changeQ
	// failed are the names of posted changes that failed, with the
	// failure's number (fails counts them): the change queue's own.
	failed  map[string]uint64
	fails   uint64
	opening map[uint64]bool // handles being opened for reading
	changeQ *queue
	execs   map[uint64]*execution
	watch   *watcher    // the change stream, once asked for
	ahead   *watchAhead // the change stream's watches, placed before it is asked for
	wg      sync.WaitGroup

	// order keeps the change stream's states in step with the answers:
	// a request that changes names holds it shared from before it is
	// applied until its answer is sent, and a batch of events holds it
	// alone from before its names are looked at until it is sent. So a
	// state taken before a change is sent before that change's answer,
	// and one sent after it was taken after the change.
	order sync.RWMutex
}

// handle is an open file and, for one opened for reading, the queue that
// applies its requests in order (nil: its requests go on the change
// queue).
type handle struct {
	f mounts.File
	q chan wire.Request
}

// queue is the change queue: requests in the order received, without
// bound (the reader never waits for it: a stat must not wait behind a
// slow fsync's followers to be read).
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	reqs   []wire.Request
	closed bool
}

func newQueue() *queue {
	q := &queue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(req wire.Request) {
	q.mu.Lock()
	q.reqs = append(q.reqs, req)
	q.mu.Unlock()
	q.cond.Signal()
}

// pop waits for the next request; false once closed and empty.
func (q *queue) pop() (wire.Request, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.reqs) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.reqs) == 0 {
		return wire.Request{}, false
	}
	req := q.reqs[0]
	q.reqs[0] = wire.Request{}
	q.reqs = q.reqs[1:]
	return req, true
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (s *server) send(resp *wire.Response) {
	if err := s.codec.Send(resp); err != nil {
		s.opts.Logger.Debug("peer: answer not sent", "err", err)
	}
}

// dispatch runs req. One that changes names or files (changes) is
// applied on the change queue, in the order received, one at a time, as
// is every request on a file opened for writing: so the daemon may send
// a change without waiting for the answer of the one before it (a create,
// its writes, its close, the next file's create), and no change overtakes
// another. A request on a file opened for reading runs in its handle's
// queue; any other request runs at once, beside the others.
func (s *server) dispatch(req wire.Request) {
	switch req.Op {
	case wire.OpRead, wire.OpWrite, wire.OpTruncateH, wire.OpSyncH, wire.OpClose, wire.OpFstat:
		s.mu.Lock()
		ordered := s.ordered[req.Handle]
		h := s.handles[req.Handle]
		s.mu.Unlock()
		switch {
		case ordered:
			s.changeQ.push(req)
		case h == nil:
			s.send(&wire.Response{ID: req.ID, Err: wire.FromError(mounts.PathErr(req.Op.String(), req.Name, fs.ErrClosed))})
		default:
			h.q <- req
		}
		return
	case wire.OpExecInput, wire.OpExecSignal:
		s.execControl(req) // in order, on the reader: input keeps its order
		return
	}
	if req.Op == wire.OpOpen {
		// The daemon names each file it opens (so that it may send
		// requests on one before the open's answer): once.
		s.mu.Lock()
		_, taken := s.handles[req.Handle]
		taken = taken || s.ordered[req.Handle] || s.opening[req.Handle]
		if req.Handle == 0 || taken {
			s.mu.Unlock()
			s.send(&wire.Response{ID: req.ID, Err: &wire.Error{Op: "open", Path: req.Name, Errno: syscall.EINVAL,
				Msg: fmt.Sprintf("handle %d is not a new handle", req.Handle)}})
			return
		}
		if changes(req) {
			s.ordered[req.Handle] = true
		} else {
			s.opening[req.Handle] = true
		}
		s.mu.Unlock()
	}
	if changes(req) {
		s.changeQ.push(req)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.send(s.call(req))
	}()
}

// applyChanges applies the change queue's requests in order until the
// stream ends. Each is ordered with the change stream's states
// (server.order), and its answer says what the names it changed are now
// (Response.After).
func (s *server) applyChanges() {
	defer s.wg.Done()
	for {
		req, ok := s.changeQ.pop()
		if !ok {
			return
		}
		s.order.RLock()
		resp := s.applyChange(req)
		if req.Posted && resp.Err != nil {
			s.failedPosted(req) // counted as the daemon counts them
		}
		s.send(resp)
		s.order.RUnlock()
	}
}

// applyChange applies one request of the change queue.
func (s *server) applyChange(req wire.Request) *wire.Response {
	switch req.Op {
	case wire.OpRead, wire.OpWrite, wire.OpSyncH:
		resp := s.onOrdered(req)
		if req.States {
			resp.After = s.states(wire.Touched(&req)...)
		}
		return resp
	case wire.OpClose, wire.OpFstat, wire.OpTruncateH:
		resp := s.onOrdered(req)
		resp.After = s.states(wire.Touched(&req)...)
		return resp
	}
	resp := &wire.Response{ID: req.ID}
	if err := s.poisoned(req); err != nil {
		resp.Err = wire.FromError(err)
	} else {
		resp = s.call(req)
	}
	resp.After = s.states(wire.Touched(&req)...)
	return resp
}

// failedPosted notes a posted change that failed: its name is refused to
// the changes sent before the daemon read the failure (wire.Request.Seen).
// Only the change queue's goroutine uses failures and fails.
func (s *server) failedPosted(req wire.Request) {
	s.fails++
	s.failed[req.Name] = s.fails
}

// poisoned is the error of a change naming a name whose posted create
// failed, sent before the daemon knew.
func (s *server) poisoned(req wire.Request) error {
	for _, n := range []string{req.Name, req.Name2} {
		k, ok := s.failed[n]
		if !ok || n == "" {
			continue
		}
		if req.Seen >= k {
			delete(s.failed, n) // the daemon knows: its changes from now on are its own
			continue
		}
		return mounts.PathErr(req.Op.String(), n, fmt.Errorf("an earlier change of this name, answered before it was made, failed: %w", syscall.ESTALE))
	}
	return nil
}

// onOrdered applies a request on a file opened for writing.
func (s *server) onOrdered(req wire.Request) *wire.Response {
	s.mu.Lock()
	h := s.handles[req.Handle]
	if req.Op == wire.OpClose {
		delete(s.handles, req.Handle)
		delete(s.ordered, req.Handle)
	}
	s.mu.Unlock()
	if h == nil { // its open failed
		return &wire.Response{ID: req.ID, Err: wire.FromError(mounts.PathErr(req.Op.String(), req.Name, fs.ErrClosed))}
	}
	return s.apply(h, req)
}

// states is what names are now, as the change stream says it.
func (s *server) states(names ...string) []wire.Event {
	out := make([]wire.Event, 0, len(names))
	for _, n := range names {
		out = append(out, s.stateOf(n))
	}
	return out
}

// stateOf is what name is now: its attributes, missing, or unknown.
func (s *server) stateOf(name string) wire.Event {
	ev := wire.Event{Kind: wire.EventChanged, Name: name}
	a, err := s.fsys.Stat(s.ctx, name)
	switch {
	case err == nil:
		ev.State, ev.Attr = wire.StateExists, wire.FromAttr(a)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		ev.State = wire.StateMissing
	}
	return ev
}

// changes reports whether req, not on a handle, goes on the change queue.
func changes(req wire.Request) bool { return wire.Changes(&req) }

func (s *server) call(req wire.Request) *wire.Response {
	ctx := s.ctx
	resp := &wire.Response{ID: req.ID}
	var err error
	switch req.Op {
	case wire.OpStat:
		var a mounts.Attr
		a, err = s.fsys.Stat(ctx, req.Name)
		resp.Attr = wire.FromAttr(a)
	case wire.OpStatDir:
		var ents []mounts.DirEntry
		var attrs []mounts.Attr
		ents, attrs, err = mounts.StatDir(ctx, s.fsys, req.Name)
		if err == nil {
			resp.Entries = wireEntries(ents, attrs)
		}
	case wire.OpReadLink:
		resp.Target, err = s.fsys.ReadLink(ctx, req.Name)
	case wire.OpOpen:
		if err = s.open(req, resp); err != nil {
			s.mu.Lock()
			delete(s.opening, req.Handle)
			s.mu.Unlock()
		}
	case wire.OpTruncate:
		err = mounts.Truncate(ctx, s.fsys, req.Name, req.Size)
	case wire.OpMkdir:
		err = mounts.Mkdir(ctx, s.fsys, req.Name, req.Mode)
		if err == nil && !req.Mtime.IsZero() && s.setsTimes() {
			err = mounts.Chtimes(ctx, s.fsys, req.Name, req.Atime, req.Mtime)
		}
	case wire.OpUnlink:
		err = mounts.Unlink(ctx, s.fsys, req.Name)
	case wire.OpRmdir:
		err = mounts.Rmdir(ctx, s.fsys, req.Name)
	case wire.OpRename:
		err = mounts.Rename(ctx, s.fsys, req.Name, req.Name2, mounts.RenameFlags(req.Flag))
	case wire.OpSymlink:
		err = mounts.Symlink(ctx, s.fsys, req.Target, req.Name)
	case wire.OpLink:
		err = mounts.Link(ctx, s.fsys, req.Name, req.Name2)
	case wire.OpMknod:
		err = mounts.Mknod(ctx, s.fsys, req.Name, req.Mode, req.Dev)
	case wire.OpChmod:
		err = mounts.Chmod(ctx, s.fsys, req.Name, req.Mode)
	case wire.OpChown:
		err = mounts.Chown(ctx, s.fsys, req.Name, req.Uid, req.Gid)
	case wire.OpChtimes:
		err = mounts.Chtimes(ctx, s.fsys, req.Name, req.Atime, req.Mtime)
	case wire.OpGetXattr:
		resp.Data, err = mounts.GetXattr(ctx, s.fsys, req.Name, req.Xattr)
	case wire.OpListXattr:
		resp.Names, err = mounts.ListXattr(ctx, s.fsys, req.Name)
	case wire.OpSetXattr:
		err = mounts.SetXattr(ctx, s.fsys, req.Name, req.Xattr, req.Data, req.Flag)
	case wire.OpRemoveXattr:
		err = mounts.RemoveXattr(ctx, s.fsys, req.Name, req.Xattr)
	case wire.OpStatFS:
		resp.StatFS, err = mounts.StatFS(ctx, s.fsys)
	case wire.OpSync:
		err = s.sync(req.Name)
	case wire.OpWatch:
		if err = s.startWatch(); err == nil {
			s.root(resp)
		}
	case wire.OpGrep:
		err = s.grep(req.Grep, resp)
	case wire.OpPrefetch:
		err = s.prefetch(req, resp)
	case wire.OpExec:
		err = s.exec(req.ExecID, req.Exec)
		resp.ExecID = req.ExecID
	default:
		resp.Err = &wire.Error{Op: req.Op.String(), Path: req.Name, Errno: syscall.ENOSYS, Msg: "unknown request"}
		return resp
	}
	resp.Err = wire.FromError(err)
	return resp
}

// root puts into a watch's answer what a new mount asks first, taken now
// that the change stream covers it: the root's attributes (Attr, left
// zero if its lstat fails) and listing (Tree, one Dir "." if it can be
// read). A mount is then ready one round trip after its hello.
func (s *server) root(resp *wire.Response) {
	resp.Owner = &wire.Owner{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	if a, err := s.fsys.Stat(s.ctx, "."); err == nil {
		resp.Attr = wire.FromAttr(a)
	}
	if ents, attrs, err := mounts.StatDir(s.ctx, s.fsys, "."); err == nil {
		resp.Tree = []wire.Dir{{Name: ".", Entries: wireEntries(ents, attrs)}}
	}
}

// wireEntries is a listing with its attributes, as the wire carries it.
func wireEntries(ents []mounts.DirEntry, attrs []mounts.Attr) []wire.Entry {
	out := make([]wire.Entry, len(ents))
	for i := range ents {
		out[i] = wire.Entry{Name: ents[i].Name, Attr: wire.FromAttr(attrs[i])}
	}
	return out
}

// open opens a file and starts its queue. A file opened for reading that
// is small comes back whole with the answer.
func (s *server) open(req wire.Request, resp *wire.Response) error {
	var f mounts.File
	var err error
	if req.Quiet {
		quiet, ok := s.fsys.(mounts.QuietReadFS)
		if !ok || mounts.WantsWrite(req.Flag) {
			return mounts.PathErr("open", req.Name, errors.ErrUnsupported)
		}
		f, err = quiet.OpenQuiet(s.ctx, req.Name)
	} else {
		f, err = mounts.OpenFile(s.ctx, s.fsys, req.Name, req.Flag, req.Mode)
	}
	if err != nil {
		return err
	}
	if c, ok := f.(interface{ Created() bool }); ok && c.Created() && !req.Mtime.IsZero() && s.setsTimes() {
		// A file the daemon answered for before it was made: the times
		// it gave it (Request.Mtime).
		if err := mounts.Chtimes(s.ctx, s.fsys, req.Name, req.Atime, req.Mtime); err != nil {
			f.Close()
			return err
		}
	}
	a, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	resp.Attr = wire.FromAttr(a)
	if !mounts.WantsWrite(req.Flag) && a.Size <= WholeFile {
		buf := make([]byte, a.Size+1) // one more: a file that grew shows it
		n, rerr := f.ReadAt(buf, 0)
		if rerr == nil || errors.Is(rerr, io.EOF) {
			resp.Data, resp.EOF = buf[:n], n <= int(a.Size)
		}
	}
	id := req.Handle
	h := &handle{f: f}
	if !changes(req) {
		h.q = make(chan wire.Request, 64)
	}
	s.mu.Lock()
	s.handles[id] = h
	delete(s.opening, id)
	s.mu.Unlock()
	resp.Handle = id
	if h.q != nil {
		s.wg.Add(1)
		go s.run(id, h)
	}
	return nil
}

// run applies a handle's requests in order until its close.
func (s *server) run(id uint64, h *handle) {
	defer s.wg.Done()
	defer func() { h.f.Close() }() // the stream ended with the file open
	for req := range h.q {
		s.onHandle(id, h, req)
		if req.Op == wire.OpClose {
			return
		}
	}
}

// onHandle applies one request on a file opened for reading and sends
// its answer.
func (s *server) onHandle(id uint64, h *handle, req wire.Request) {
	if req.Op == wire.OpClose {
		s.mu.Lock()
		delete(s.handles, id)
		s.mu.Unlock()
	}
	s.send(s.apply(h, req))
}

// apply applies one request on an open file.
func (s *server) apply(h *handle, req wire.Request) *wire.Response {
	resp := &wire.Response{ID: req.ID}
	var err error
	switch req.Op {
	case wire.OpRead:
		buf := make([]byte, req.Size)
		var n int
		n, err = h.f.ReadAt(buf, req.Off)
		if errors.Is(err, io.EOF) {
			resp.EOF, err = true, nil
		}
		resp.Data = buf[:n]
	case wire.OpWrite:
		err = errWritable(h.f, req.Name)
		if err == nil {
			resp.N, err = h.f.(mounts.WritableFile).WriteAt(req.Data, req.Off)
		}
		if err == nil && !req.Mtime.IsZero() {
			// A file the daemon answered for before it was made:
			// the modification time it told (Request.Mtime).
			err = setMtime(h.f, req.Name, req.Mtime)
		}
	case wire.OpTruncateH:
		err = errWritable(h.f, req.Name)
		if err == nil {
			err = h.f.(mounts.WritableFile).Truncate(req.Size)
		}
	case wire.OpSyncH:
		if wf, ok := h.f.(mounts.WritableFile); ok {
			err = wf.Sync()
		}
	case wire.OpFstat:
		var a mounts.Attr
		a, err = h.f.Stat()
		resp.Attr = wire.FromAttr(a)
	case wire.OpClose:
		// What the file is as it is closed: the daemon keeps it for
		// the name it wrote through, if nothing changed it since.
		if a, serr := h.f.Stat(); serr == nil {
			resp.Attr = wire.FromAttr(a)
		}
		err = h.f.Close()
		h.f = closedFile{}
	}
	resp.Err = wire.FromError(err)
	return resp
}

func errWritable(f mounts.File, name string) error {
	if _, ok := f.(mounts.WritableFile); !ok {
		return mounts.PathErr("write", name, os.ErrPermission)
	}
	return nil
}

// closeAll closes what the daemon left open when the stream ended: the
// changes received are applied first.
func (s *server) closeAll() {
	s.changeQ.close()
	s.mu.Lock()
	for id, h := range s.handles {
		if h.q != nil {
			close(h.q) // its run closes the file
			delete(s.handles, id)
		}
	}
	w := s.watch
	s.mu.Unlock()
	if w != nil {
		w.close(true)
	} else if a := s.ahead; a != nil {
		<-a.done // the walk ends; nothing reported yet
		if a.w != nil {
			a.w.close(false)
		}
	}
	s.stopExecs()
	s.wg.Wait()
	// The files opened for writing, their queued requests applied.
	s.mu.Lock()
	for id, h := range s.handles {
		h.f.Close()
		delete(s.handles, id)
	}
	s.mu.Unlock()
}

// closedFile stands for a file its close already closed.
type closedFile struct{ mounts.File }

func (closedFile) Close() error { return nil }

// sync is fsync by name; for a directory, also syncfs(2) of the file
// system that holds the served directory: a daemon that answered changes
// before they were applied (write-behind) has the fsync of a directory
// as its barrier, and the program that asks it wants what it wrote in the
// tree on disk, as syncfs would make it (which no FUSE server is asked).
func (s *server) sync(name string) error {
	if err := mounts.Sync(s.ctx, s.fsys, name); err != nil {
		return err
	}
	a, err := s.fsys.Stat(s.ctx, name)
	if err != nil || !a.IsDir() || s.opts.Dir == "" {
		return err
	}
	root, err := os.Open(s.opts.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := unix.Syncfs(int(root.Fd())); err != nil {
		return mounts.PathErr("sync", name, os.NewSyscallError("syncfs", err))
	}
	return nil
}

// setsTimes reports whether the mount served sets times: the daemon's
// times for what it created are then set (a mount without cannot).
func (s *server) setsTimes() bool {
	_, ok := s.fsys.(mounts.ChtimesFS)
	return ok
}

// setMtime sets the modification time of an open file (futimens(2)).
func setMtime(f mounts.File, name string, mtime time.Time) error {
	fdf, ok := f.(mounts.FDFile)
	if !ok {
		return nil
	}
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	// utimensat with a NULL path is futimens: the descriptor's file.
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, fdf.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return mounts.PathErr("write", name, os.NewSyscallError("futimens", e))
	}
	return nil
}
