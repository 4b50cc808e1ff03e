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
	s := &storeSync{o: o}
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
	if err := s.o.Session.Fenced(); err != nil {
		return jsonrpc.StorePushResult{}, err
	}
	if id == "" {
		info, err := c.ws.Create(ctx, name)
		if err != nil {
			return jsonrpc.StorePushResult{}, err
		}
		id = info.ID
	}
	r, err := s.o.Session.Push(ctx, c.ws, id, store.PushOptions{Keep: s.o.Keep})
	if err != nil {
		if errors.Is(err, store.ErrFenced) {
			s.o.Logger.Error("store: another daemon took this workspace over: pushes stop; the workspace goes on here, unsaved", "store", s.o.URL, "err", err)
		}
		return jsonrpc.StorePushResult{}, err
	}
	s.pushed, s.last = id, r
	s.o.Logger.Info("store: pushed", "checkpoint", id, "url", s.o.URL+"@"+strconv.Itoa(r.Ref.Seq),
		"changed_bytes", r.Changed, "sent_bytes", r.Sent, "uploaded", r.Uploaded, "chunks", r.Chunks)
	return jsonrpc.StorePushResult{ID: id, URL: s.o.URL + "@" + strconv.Itoa(r.Ref.Seq), Seq: r.Ref.Seq, Manifest: r.Ref.Manifest,
		Files: r.Files, Read: r.Read, Changed: r.Changed, Sent: r.Sent, Chunks: r.Chunks, Uploaded: r.Uploaded}, nil
}

// changed reports whether the workspace changed since the checkpoint last
// pushed (always, before the first).
func (s *storeSync) changed(c *Checkpoints) bool {
	s.mu.Lock()
	id := s.pushed
	s.mu.Unlock()
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
		if s.o.Session.Fenced() != nil {
			return
		}
		if !s.changed(c) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		_, err := s.push(ctx, c, "", "sync")
		cancel()
		if err != nil {
			s.o.Logger.Warn("store: sync push failed; the store is behind, retried at the next tick", "store", s.o.URL, "err", err)
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
	if s.o.Sync > 0 && s.o.Session.Fenced() == nil && s.changed(c) {
		if _, err = s.push(ctx, c, "", "close"); err != nil {
			err = fmt.Errorf("store: the last push at close failed: %w", err)
		}
	}
	return errors.Join(err, s.o.Session.Release(ctx))
}
