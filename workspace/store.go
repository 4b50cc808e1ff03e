package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/store"
)

// The object store: checkpoints that leave the machine (package store).
// A workspace attached to a store session pushes checkpoints to it on
// demand (store.push on the control socket: vfsmount checkpoint push) and,
// with a sync interval, on its own: a checkpoint taken and pushed every
// interval when something changed, and at a clean close. A session that
// was fenced (another daemon took the workspace over) stops pushing and
// says so; the workspace goes on working locally.

// StoreOptions attach a store session to a workspace's checkpoints.
type StoreOptions struct {
	// Session is the lease of the workspace in the store.
	Session *store.Session
	// URL is the workspace's URL (s3://BUCKET/PREFIX/NAME), for messages.
	URL string
	// Sync takes and pushes a checkpoint at this interval (0: only on
	// demand) and at a clean close.
	Sync time.Duration
	// Keep bounds the checkpoints the store's head keeps (0: all).
	Keep   int
	Logger *slog.Logger
}

// storeSync is the store a workspace's checkpoints are pushed to.
type storeSync struct {
	o StoreOptions
	// mu runs one push at a time; pushed is the local id last pushed.
	mu     sync.Mutex
	pushed string
	last   store.PushResult
	stop   chan struct{}
	done   chan struct{}

	// st is what store.status reports, under stMu (not mu: a status is
	// answered while a push runs); so are sess and url, the session
	// pushed to and its workspace's URL (o.Session and o.URL until a
	// store.resume of another workspace swaps them, under mu too).
	stMu sync.Mutex
	st   storeState
	sess *store.Session
	url  string
}

// current is the session pushed to and its workspace's URL.
func (s *storeSync) current() (*store.Session, string) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	return s.sess, s.url
}

// storeState is the outcome of the pushes so far.
type storeState struct {
	pushedSeq    int
	pushedID     string
	pushedAt     time.Time
	failingSince time.Time
	failures     int
	lastErr      error
	pushingSince time.Time // a push in progress (retrying, perhaps)
	// resumed is the checkpoint a store.resume brought in, before any
	// push since.
	resumed store.Ref
}

// ErrNoCheckpoints: a store needs a writable layer to push.
var ErrNoCheckpoints = errors.New("the workspace has no writable layer a checkpoint can freeze, so nothing to push to a store")

// AttachStore attaches o's session to the workspace's checkpoints, serves
// store.push on its control socket, and starts the sync loop when o.Sync
// is set. It fails with ErrNoCheckpoints when the workspace has none.
func (ws *Workspace) AttachStore(o StoreOptions) error {
	if ws.Checkpoints == nil {
		return ErrNoCheckpoints
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &storeSync{o: o, sess: o.Session, url: o.URL}
	ws.Checkpoints.store = s
	o.Session.KeepRenewing()
	if o.Sync > 0 {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.loop(ws.Checkpoints)
	}
	ws.OnClose(func() error { return s.close(ws.Checkpoints) })
	return nil
}

// StorePush pushes checkpoint p.ID, or a new one when it is empty.
func (c *Checkpoints) StorePush(ctx context.Context, p jsonrpc.StorePushParams) (jsonrpc.StorePushResult, error) {
	if c.store == nil {
		return jsonrpc.StorePushResult{}, fmt.Errorf("%w: no store", jsonrpc.ErrInvalidParams)
	}
	res, err := c.store.push(ctx, c, p.ID, "push")
	if errors.Is(err, checkpoint.ErrUnknown) {
		err = fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	return res, err
}

// push pushes checkpoint id (a new one named name when empty).
func (s *storeSync) push(ctx context.Context, c *Checkpoints, id, name string) (jsonrpc.StorePushResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(ctx, c, id, name)
}

// pushLocked is push; the caller holds s.mu.
func (s *storeSync) pushLocked(ctx context.Context, c *Checkpoints, id, name string) (jsonrpc.StorePushResult, error) {
	sess, url := s.current()
	if err := sess.Fenced(); err != nil {
		return jsonrpc.StorePushResult{}, err
	}
	if id == "" {
		info, err := c.ws.Create(ctx, name)
		if err != nil {
			return jsonrpc.StorePushResult{}, err
		}
		id = info.ID
	}
	s.stMu.Lock()
	s.st.pushingSince = time.Now()
	s.stMu.Unlock()
	r, err := sess.Push(ctx, c.ws, id, store.PushOptions{Keep: s.o.Keep})
	s.stMu.Lock()
	s.st.pushingSince = time.Time{}
	s.stMu.Unlock()
	if err != nil {
		if errors.Is(err, store.ErrFenced) {
			s.o.Logger.Error("store: another daemon took this workspace over: pushes stop; the workspace goes on here, unsaved", "store", url, "err", err)
		}
		if !errors.Is(err, checkpoint.ErrUnknown) {
			s.failed(err)
		}
		return jsonrpc.StorePushResult{}, err
	}
	s.pushed, s.last = id, r
	s.stMu.Lock()
	s.st = storeState{pushedSeq: r.Ref.Seq, pushedID: id, pushedAt: time.Now()}
	s.stMu.Unlock()
	s.o.Logger.Info("store: pushed", "checkpoint", id, "url", url+"@"+strconv.Itoa(r.Ref.Seq),
		"changed_bytes", r.Changed, "sent_bytes", r.Sent, "uploaded", r.Uploaded, "chunks", r.Chunks)
	return jsonrpc.StorePushResult{ID: id, URL: url + "@" + strconv.Itoa(r.Ref.Seq), Seq: r.Ref.Seq, Manifest: r.Ref.Manifest,
		Files: r.Files, Read: r.Read, Changed: r.Changed, Sent: r.Sent, Chunks: r.Chunks, Uploaded: r.Uploaded}, nil
}

// failed records a push that failed: the store is behind from the first
// failure on until a push goes through.
func (s *storeSync) failed(err error) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.st.failures == 0 {
		s.st.failingSince = time.Now()
	}
	s.st.failures++
	s.st.lastErr = err
}

// StoreStatus says where the workspace's store is, what it last got, and
// whether it is behind: pushes failing (retried; the workspace works on
// locally) or stopped (fenced).
func (c *Checkpoints) StoreStatus(context.Context) (jsonrpc.StoreStatusResult, error) {
	if c.store == nil {
		return jsonrpc.StoreStatusResult{}, fmt.Errorf("%w: no store", jsonrpc.ErrInvalidParams)
	}
	s := c.store
	sess, url := s.current()
	res := jsonrpc.StoreStatusResult{URL: url}
	if _, name, _, err := store.ParseWorkspaceURL(url); err == nil {
		res.Name = name
	}
	if s.o.Sync > 0 {
		res.Sync = s.o.Sync.String()
	}
	s.stMu.Lock()
	st := s.st
	s.stMu.Unlock()
	switch {
	case st.pushedSeq > 0:
		res.LastPush = &jsonrpc.StoreCheckpoint{Seq: st.pushedSeq, ID: st.pushedID, Time: st.pushedAt}
	case st.resumed.Seq > 0:
		r := st.resumed
		res.LastPush = &jsonrpc.StoreCheckpoint{Seq: r.Seq, ID: r.ID, Time: r.Time}
	default:
		// Nothing pushed yet by this daemon: the checkpoint it
		// resumed, if any.
		if h := sess.Head(); h != nil {
			if r, ok := h.Latest(); ok {
				res.LastPush = &jsonrpc.StoreCheckpoint{Seq: r.Seq, ID: r.ID, Time: r.Time}
			}
		}
	}
	if res.LastPush != nil {
		res.LastPush.URL = url + "@" + strconv.Itoa(res.LastPush.Seq)
	}
	res.Unpushed = s.changed(c)
	if st.failures > 0 {
		t := st.failingSince
		res.FailingSince, res.Failures, res.LastError = &t, st.failures, st.lastErr.Error()
	}
	if err := sess.Fenced(); err != nil && errors.Is(err, store.ErrFenced) {
		res.Fenced, res.Why = true, err.Error()
	}
	if !st.pushingSince.IsZero() {
		t := st.pushingSince
		res.PushingSince = &t
	}
	res.Behind = res.Fenced || st.failures > 0
	return res, nil
}

// changed reports whether the workspace changed since the checkpoint last
// pushed (always, before the first). It does not wait for a push running.
func (s *storeSync) changed(c *Checkpoints) bool {
	s.stMu.Lock()
	id := s.st.pushedID
	s.stMu.Unlock()
	if id == "" {
		return true
	}
	for _, m := range c.ws.Mounts() {
		if m.Tree == nil {
			continue
		}
		names, err := m.Tree.ChangedSince(id)
		if err != nil || len(names) > 0 {
			return true
		}
	}
	return false
}

// loop pushes a checkpoint every interval when something changed; a push
// that fails is tried again at the next tick (the workspace works on
// locally meanwhile).
func (s *storeSync) loop(c *Checkpoints) {
	defer close(s.done)
	t := time.NewTicker(s.o.Sync)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if sess, _ := s.current(); sess.Fenced() != nil {
			return
		}
		if !s.changed(c) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		_, err := s.push(ctx, c, "", "sync")
		cancel()
		if err != nil {
			_, url := s.current()
			s.o.Logger.Warn("store: sync push failed; the store is behind, retried at the next tick", "store", url, "err", err)
		}
	}
}

// close stops the loop, pushes what changed since the last push (a clean
// close loses nothing), and lets the lease go.
func (s *storeSync) close(c *Checkpoints) error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if sess, _ := s.current(); s.o.Sync > 0 && sess.Fenced() == nil && s.changed(c) {
		if _, err = s.push(ctx, c, "", "close"); err != nil {
			err = fmt.Errorf("store: the last push at close failed: %w", err)
		}
	}
	sess, _ := s.current()
	return errors.Join(err, sess.Release(ctx))
}
