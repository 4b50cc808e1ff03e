package jsonrpc

import (
	"context"
	"errors"
	"time"
)

// StorePusher serves store.push: a checkpoint sent to the workspace's
// object store (package store), for vfsmount checkpoint push; and
// store.status: how far the store is behind, for vfsmount status.
//
//	store.push   {id?} -> StorePushResult
//	store.status {}    -> StoreStatusResult
//
// Without an id a checkpoint is taken and pushed. Bad input (an unknown
// id) wraps [ErrInvalidParams].
type StorePusher interface {
	StorePush(ctx context.Context, p StorePushParams) (StorePushResult, error)
	StoreStatus(ctx context.Context) (StoreStatusResult, error)
}

// StoreStatusResult says where the workspace's store is and whether it
// holds the workspace as it is: Behind when pushes fail (the store
// unreachable, say: retried, the workspace working on locally meanwhile)
// or stopped (Fenced: another daemon took the workspace over).
type StoreStatusResult struct {
	// URL is the workspace's, s3://BUCKET/PREFIX/NAME; Name its NAME.
	URL  string `json:"url"`
	Name string `json:"name"`
	// Sync is the interval of the sync loop ("" pushes on demand only).
	Sync string `json:"sync,omitempty"`
	// LastPush is the newest checkpoint the store has of this session
	// (the one resumed before any push); nil when there is none.
	LastPush *StoreCheckpoint `json:"last_push,omitempty"`
	// Unpushed: the workspace changed since LastPush (true before this
	// daemon's first push, a resumed workspace's too).
	Unpushed bool `json:"unpushed_changes"`
	// Behind: the last push failed, or pushes stopped (Fenced).
	Behind bool `json:"behind"`
	// FailingSince is the first failed push since the last that went
	// through; Failures counts them; LastError is the newest's.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	Failures     int        `json:"failures,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	// PushingSince: a push is in progress (its requests retried with
	// backoff while the store does not answer).
	PushingSince *time.Time `json:"pushing_since,omitempty"`
	// Fenced: another daemon took the workspace over; this one pushes
	// no more (Why says so).
	Fenced bool   `json:"fenced"`
	Why    string `json:"fenced_error,omitempty"`
}

// StoreCheckpoint is one checkpoint in the store: its number there
// (URL@SEQ), the id it had here, and when it was pushed (taken, for one
// this daemon resumed).
type StoreCheckpoint struct {
	Seq  int       `json:"seq"`
	ID   string    `json:"id"`
	URL  string    `json:"url"`
	Time time.Time `json:"time"`
}

// StorePushParams name the checkpoint to push ("" takes one).
type StorePushParams struct {
	ID string `json:"id,omitempty"`
}

// StorePushResult says what a push did: the checkpoint's id here and its
// number in the store (URL/NAME@SEQ), and its bytes: the content that
// changed since the previous push, and all that was sent.
type StorePushResult struct {
	ID       string `json:"id"`
	URL      string `json:"url"`
	Seq      int    `json:"seq"`
	Manifest string `json:"manifest"`
	Files    int    `json:"files"`
	Read     int    `json:"read"`
	Changed  int64  `json:"changed_bytes"`
	Sent     int64  `json:"sent_bytes"`
	Chunks   int    `json:"chunks"`
	Uploaded int    `json:"uploaded"`
}

const errNoStore = "this workspace has no store (mount it with --store or --resume, or a store: section in its config)"

// SetStorePusher serves store.push from p. Call it before serving.
func (s *Server) SetStorePusher(p StorePusher) { s.store = p }

// dispatchStore answers store.push, store.status and store.resume; ok is
// false for any other method.
func (s *Server) dispatchStore(ctx context.Context, method string, decode func(any) *Error) (_ any, _ *Error, ok bool) {
	var run func() (any, error)
	switch method {
	case "store.status":
		run = func() (any, error) { return s.store.StoreStatus(ctx) }
	case "store.push":
		var p StorePushParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		run = func() (any, error) { return s.store.StorePush(ctx, p) }
	case "store.resume":
		var p StoreResumeParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		r, resumes := s.store.(StoreResumer)
		if !resumes {
			return nil, &Error{rpcInvalidParams, "method " + method + ": " + errNoStore}, true
		}
		run = func() (any, error) { return r.StoreResume(ctx, p) }
	default:
		return nil, nil, false
	}
	if s.store == nil {
		return nil, &Error{rpcInvalidParams, "method " + method + ": " + errNoStore}, true
	}
	res, err := run()
	switch {
	case errors.Is(err, ErrInvalidParams):
		return nil, &Error{rpcInvalidParams, err.Error()}, true
	case err != nil:
		return nil, &Error{rpcExportFailed, err.Error()}, true
	}
	return res, nil, true
}

// StoreResumer serves store.resume: a checkpoint of the store brought
// into the running workspace.
//
//	store.resume {ref, take_over?} -> StoreResumeResult
//
// Bad input (a ref the store lacks, a checkpoint of other mounts or of
// another commit) wraps [ErrInvalidParams].
type StoreResumer interface {
	StoreResume(ctx context.Context, p StoreResumeParams) (StoreResumeResult, error)
}

// StoreResumeParams name the checkpoint: NAME[@CHECKPOINT] in the
// workspace's store, or its whole URL s3://BUCKET/PREFIX/NAME[@CHECKPOINT]
// (the newest without @). TakeOver takes NAME from the daemon that holds
// it, as --take-over does.
type StoreResumeParams struct {
	Ref      string `json:"ref"`
	TakeOver bool   `json:"take_over,omitempty"`
}

// StoreResumeResult says what was brought back: the checkpoint (URL@SEQ,
// with the id and time it had where it was taken), the workspace the
// daemon now pushes to, the mounts restored, and every name that changed.
type StoreResumeResult struct {
	URL       string    `json:"url"`
	Workspace string    `json:"workspace"`
	Seq       int       `json:"seq"`
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Restored  []string  `json:"restored"`
	Changed   []string  `json:"changed"`
	// Left are this workspace's writable mounts the checkpoint does not
	// hold, left as they are.
	Left []string `json:"left,omitempty"`
}
