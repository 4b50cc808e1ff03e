package jsonrpc

import (
	"context"
	"errors"
)

// StorePusher serves store.push: a checkpoint sent to the workspace's
// object store (package store), for vfsmount checkpoint push.
//
//	store.push {id?} -> StorePushResult
//
// Without an id a checkpoint is taken and pushed. Bad input (an unknown
// id) wraps [ErrInvalidParams].
type StorePusher interface {
	StorePush(ctx context.Context, p StorePushParams) (StorePushResult, error)
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

// dispatchStore answers store.push; ok is false for any other method.
func (s *Server) dispatchStore(ctx context.Context, method string, decode func(any) *Error) (_ any, _ *Error, ok bool) {
	if method != "store.push" {
		return nil, nil, false
	}
	var p StorePushParams
	if e := decode(&p); e != nil {
		return nil, e, true
	}
	if s.store == nil {
		return nil, &Error{rpcInvalidParams, "method " + method + ": " + errNoStore}, true
	}
	res, err := s.store.StorePush(ctx, p)
	switch {
	case errors.Is(err, ErrInvalidParams):
		return nil, &Error{rpcInvalidParams, err.Error()}, true
	case err != nil:
		return nil, &Error{rpcExportFailed, err.Error()}, true
	}
	return res, nil, true
}
