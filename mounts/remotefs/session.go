package remotefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vfsmount/vfsmount/mounts/remotefs/wire"
)

// session is one connection to the peer. Requests are answered by ID, so
// any number are in flight; a session that dies fails them all at once.
type session struct {
	codec *wire.Codec
	rwc   io.ReadWriteCloser // nil until attach
	out   penned
	in    later

	mu      sync.Mutex
	pending map[uint64]chan *wire.Response
	// posted are the callbacks of requests sent without a caller waiting
	// (ReadOnlyFS.post): run on the reader, in the order of the answers,
	// or with the session's error when it dies.
	posted map[uint64]func(*wire.Response, error)
	next   uint64
	handle uint64 // the last handle named (opens name their file)
	// seen counts the failures of posted changes (Request.Posted) read,
	// as the peer counts them; every request carries it (Request.Seen).
	seen     uint64
	postedID map[uint64]bool
	err      error // why the session died; nil while it lives
	dead     chan struct{}
	events   func([]wire.Event)
	// backSettled is closed once it is known whether the link carries
	// connections back (BackLink), and they are served.
	backSettled chan struct{}
	// backWaiting counts the callers waiting for it (waitBack), for
	// tests.
	backWaiting atomic.Int64
	onFail      func() // run once, before anyone learns the session died

	// lastRecv is the unix nanoseconds of the last message read, or of
	// the request that ended an idle spell (nothing pending): the
	// monitor's silence counts from when an answer was awaited.
	lastRecv atomic.Int64
}

// newSession makes a session that has no stream yet: its hello and the
// requests started before attach are kept (first), for the dialer to send
// with the start of the peer.
func newSession(build string, events func([]wire.Event), onFail func()) *session {
	s := &session{pending: map[uint64]chan *wire.Response{}, posted: map[uint64]func(*wire.Response, error){},
		postedID: map[uint64]bool{}, dead: make(chan struct{}), events: events, onFail: onFail,
		backSettled: make(chan struct{})}
	s.out.buf.WriteString(wire.Hello(build))
	s.codec = wire.NewCodec(&s.in, &s.out)
	s.lastRecv.Store(time.Now().UnixNano())
	return s
}

// first is what the session has sent before it has a stream.
func (s *session) first() []byte { return s.out.buf.Bytes() }

// attach gives the session its stream, which the dialer started with
// first; called before anyone else has the session.
func (s *session) attach(rwc io.ReadWriteCloser) {
	s.rwc, s.in.r, s.out.w = rwc, rwc, rwc
}

// penned is where a session writes: kept until it has a stream, then the
// stream.
type penned struct {
	buf bytes.Buffer
	w   io.Writer
}

func (p *penned) Write(b []byte) (int, error) {
	if p.w == nil {
		return p.buf.Write(b)
	}
	return p.w.Write(b)
}

// later reads from the stream a session is attached to.
type later struct{ r io.Reader }

func (l *later) Read(b []byte) (int, error) { return l.r.Read(b) }

// read delivers responses to their callers and events to the mount.
func (s *session) read() {
	for {
		var resp wire.Response
		if err := s.codec.Recv(&resp); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the peer closed the connection")
			}
			s.fail(err)
			return
		}
		s.lastRecv.Store(time.Now().UnixNano())
		if resp.ID == 0 {
			s.events(resp.Events)
			continue
		}
		s.mu.Lock()
		ch := s.pending[resp.ID]
		delete(s.pending, resp.ID)
		fn := s.posted[resp.ID]
		delete(s.posted, resp.ID)
		failed := s.postedID[resp.ID] && resp.Err != nil
		delete(s.postedID, resp.ID)
		s.mu.Unlock()
		if ch != nil {
			ch <- &resp
		}
		if fn != nil {
			fn(&resp, nil)
		}
		if failed {
			// Read, and its answer taken (fn): the requests sent
			// from now on say so.
			s.mu.Lock()
			s.seen++
			s.mu.Unlock()
		}
	}
}

// fail ends the session: every caller waiting gets err. What the session
// cached is forgotten (onFail) before dead is closed, and a call that
// finds the session dead waits for dead: no caller that has learnt of the
// loss is answered from the cache the lost session kept.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	s.pending = nil
	posted := s.posted
	s.posted = nil
	s.mu.Unlock()
	s.onFail()
	close(s.dead)
	s.rwc.Close()
	for _, fn := range posted {
		fn(nil, err)
	}
}

// alive reports nil while the session lives, else why it died.
func (s *session) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// start sends req and returns the channel its answer comes on.
func (s *session) start(req *wire.Request) (<-chan *wire.Response, error) {
	ch := make(chan *wire.Response, 1)
	if _, err := s.send(req, func() { s.pending[req.ID] = ch }); err != nil {
		return nil, err
	}
	return ch, nil
}

// startPosted sends req without a caller to wait for its answer: fn gets
// it, on the session's reader (in the order the answers come), or the
// session's error if it dies first. fn must not block.
func (s *session) startPosted(req *wire.Request, fn func(*wire.Response, error)) error {
	if registered, err := s.send(req, func() { s.posted[req.ID] = fn }); !registered {
		return err
	}
	return nil // sent, or the send failed and ended the session: fn has its error
}

// send numbers req (and names the file an open opens), registers who
// gets its answer (wait, under s.mu; registered says it was) and sends
// it. A send that fails ends the session.
func (s *session) send(req *wire.Request, wait func()) (registered bool, err error) {
	s.mu.Lock()
	if err := s.err; err != nil {
		s.mu.Unlock()
		<-s.dead // what the session cached is forgotten before a caller learns it died
		return false, err
	}
	s.next++
	req.ID = s.next
	req.Seen = s.seen
	if req.Posted {
		s.postedID[req.ID] = true
	}
	if req.Op == wire.OpOpen && req.Handle == 0 {
		req.Handle = s.newHandleLocked()
	}
	if len(s.pending) == 0 && len(s.posted) == 0 {
		s.lastRecv.Store(time.Now().UnixNano())
	}
	wait()
	s.mu.Unlock()
	if err := s.codec.Send(req); err != nil {
		s.fail(fmt.Errorf("sending: %w", err))
		<-s.dead // ended by another goroutine's fail, which may be forgetting still
		return true, err
	}
	return true, nil
}

// newHandle names a file to open.
func (s *session) newHandle() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newHandleLocked()
}

func (s *session) newHandleLocked() uint64 {
	s.handle++
	return s.handle
}

// post sends a request that is not answered (exec-input, exec-signal).
func (s *session) post(req *wire.Request) error {
	if err := s.alive(); err != nil {
		<-s.dead
		return err
	}
	if err := s.codec.Send(req); err != nil {
		s.fail(fmt.Errorf("sending: %w", err))
		return err
	}
	return nil
}

// wait waits for the answer on ch, for the session's death, or for ctx.
func (s *session) wait(ctx context.Context, ch <-chan *wire.Response) (*wire.Response, error) {
	select {
	case resp := <-ch:
		return resp, nil
	case <-s.dead:
		select { // an answer that came before the end still counts
		case resp := <-ch:
			return resp, nil
		default:
		}
		return nil, s.alive()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitBack waits until it is known whether the link carries connections
// back, at most d (an ssh server that never answers the forwarding
// request: the link's own faults are the monitor's).
func (s *session) waitBack(d time.Duration) {
	s.backWaiting.Add(1)
	defer s.backWaiting.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.backSettled:
	case <-s.dead:
	case <-t.C:
	}
}

// linkError is what an operation gets when the link to the peer is down
// or lost: EIO with the mount's words for it.
type linkError struct {
	what  string // "the link to ssh://host is down"
	cause error
}

func (e *linkError) Error() string {
	if e.cause == nil {
		return e.what
	}
	return e.what + ": " + e.cause.Error()
}

// ErrLinkDown is matched (errors.Is) by every error an operation gets
// because the link to the peer is down.
var ErrLinkDown = errors.New("the link to the remote machine is down")

func (e *linkError) Unwrap() []error { return []error{ErrLinkDown, syscall.EIO, e.cause} }
