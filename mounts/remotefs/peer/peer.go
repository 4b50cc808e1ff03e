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
	"sync/atomic"
	"syscall"

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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{ctx: ctx, fsys: fsys, opts: opts, codec: wire.NewCodec(r, w),
		handles: map[uint64]*handle{}, execs: map[uint64]*execution{}}
	defer s.closeAll()
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
	next    atomic.Uint64
	execs   map[uint64]*execution
	watch   *watcher
	wg      sync.WaitGroup

	// order keeps the change stream's states in step with the answers:
	// a request that changes names holds it shared from before it is
	// applied until its answer is sent, and a batch of events holds it
	// alone from before its names are looked at until it is sent. So a
	// state taken before a change is sent before that change's answer,
	// and one sent after it was taken after the change.
	order sync.RWMutex
}

// handle is an open file and the queue that applies its requests in order.
type handle struct {
	f mounts.File
	q chan wire.Request
}

func (s *server) send(resp *wire.Response) {
	if err := s.codec.Send(resp); err != nil {
		s.opts.Logger.Debug("peer: answer not sent", "err", err)
	}
}

// dispatch runs req: in its handle's queue when it names one, so that a
// file's requests apply in the order they were sent, else on its own.
func (s *server) dispatch(req wire.Request) {
	switch req.Op {
	case wire.OpRead, wire.OpWrite, wire.OpTruncateH, wire.OpSyncH, wire.OpClose, wire.OpFstat:
		s.mu.Lock()
		h := s.handles[req.Handle]
		s.mu.Unlock()
		if h == nil {
			s.send(&wire.Response{ID: req.ID, Err: wire.FromError(mounts.PathErr(req.Op.String(), req.Name, fs.ErrClosed))})
			return
		}
		h.q <- req
		return
	case wire.OpExecInput, wire.OpExecSignal:
		s.execControl(req) // in order, on the reader: input keeps its order
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if changes(req) {
			s.order.RLock()
			defer s.order.RUnlock()
		}
		s.send(s.call(req))
	}()
}

// changes reports whether req, not on a handle, may change a name: it
// is ordered with the change stream's states (server.order).
func changes(req wire.Request) bool {
	switch req.Op {
	case wire.OpStat, wire.OpStatDir, wire.OpReadLink, wire.OpGetXattr, wire.OpListXattr,
		wire.OpStatFS, wire.OpWatch, wire.OpGrep, wire.OpPrefetch, wire.OpExec:
		return false
	case wire.OpOpen:
		return mounts.WantsWrite(req.Flag) || req.Flag&(os.O_CREATE|os.O_TRUNC) != 0
	}
	return true
}

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
		err = s.open(req, resp)
	case wire.OpTruncate:
		err = mounts.Truncate(ctx, s.fsys, req.Name, req.Size)
	case wire.OpMkdir:
		err = mounts.Mkdir(ctx, s.fsys, req.Name, req.Mode)
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
		err = mounts.Sync(ctx, s.fsys, req.Name)
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
	id := s.next.Add(1)
	h := &handle{f: f, q: make(chan wire.Request, 64)}
	s.mu.Lock()
	s.handles[id] = h
	s.mu.Unlock()
	resp.Handle = id
	s.wg.Add(1)
	go s.run(id, h)
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

// onHandle applies one request on an open file and sends its answer;
// one that may change the file is ordered with the change stream's
// states (server.order).
func (s *server) onHandle(id uint64, h *handle, req wire.Request) {
	if req.Op != wire.OpRead && req.Op != wire.OpFstat {
		s.order.RLock()
		defer s.order.RUnlock()
	}
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
		s.mu.Lock()
		delete(s.handles, id)
		s.mu.Unlock()
		resp.Err = wire.FromError(h.f.Close())
		h.f = closedFile{}
		s.send(resp)
		return
	}
	resp.Err = wire.FromError(err)
	s.send(resp)
}

func errWritable(f mounts.File, name string) error {
	if _, ok := f.(mounts.WritableFile); !ok {
		return mounts.PathErr("write", name, os.ErrPermission)
	}
	return nil
}

// closeAll closes what the daemon left open when the stream ended.
func (s *server) closeAll() {
	s.mu.Lock()
	for id, h := range s.handles {
		close(h.q) // its run closes the file
		delete(s.handles, id)
	}
	w := s.watch
	s.mu.Unlock()
	if w != nil {
		w.close()
	}
	s.stopExecs()
	s.wg.Wait()
}

// closedFile stands for a file its close already closed.
type closedFile struct{ mounts.File }

func (closedFile) Close() error { return nil }
