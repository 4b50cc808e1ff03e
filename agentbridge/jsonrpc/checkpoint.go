package jsonrpc

import (
	"context"
	"errors"
	"time"
)

// Checkpointer serves the checkpoint.* methods: checkpoints of every
// writable layer of the workspace at once (memory mounts and the upper
// layers of writable git mounts), restorable as one.
//
//	checkpoint.create  {name?}                        -> CheckpointInfo
//	checkpoint.list    {}                             -> {checkpoints}
//	checkpoint.diff    {from, to?, paths?, format?}   -> {text}
//	checkpoint.restore {id, paths?}                   -> {restored, not_covered?, changed}
//	checkpoint.delete  {id}                           -> {deleted}
//
// Errors that are bad input (an unknown id, a path in no mount, a
// workspace with no writable layer) wrap [ErrInvalidParams].
type Checkpointer interface {
	CheckpointCreate(ctx context.Context, p CheckpointCreateParams) (CheckpointInfo, error)
	CheckpointList(ctx context.Context) (CheckpointListResult, error)
	CheckpointDiff(ctx context.Context, p CheckpointDiffParams) (DiffResult, error)
	CheckpointRestore(ctx context.Context, p CheckpointRestoreParams) (CheckpointRestoreResult, error)
	CheckpointDelete(ctx context.Context, p CheckpointDeleteParams) (CheckpointDeleteResult, error)
}

// CheckpointCreateParams name the new checkpoint (optional).
type CheckpointCreateParams struct {
	Name string `json:"name,omitempty"`
}

// CheckpointInfo describes a checkpoint: its id, name, time, what it holds
// that no older one does (Bytes, Inodes), and what backs each mount.
type CheckpointInfo struct {
	ID       string            `json:"id"`
	Name     string            `json:"name,omitempty"`
	Time     time.Time         `json:"time"`
	Bytes    int64             `json:"bytes"`
	Inodes   int               `json:"inodes"`
	Manifest []CheckpointMount `json:"manifest"`
}

// CheckpointMount is one mount of a checkpoint's manifest: what backs it
// (Source; Commit, the full SHA of a git mount's commit). Coverage is
// "frozen" (in the checkpoint), "immutable" (a commit: nothing to freeze)
// or "not covered" (a host directory: a restore leaves it as it is).
type CheckpointMount struct {
	Prefix   string `json:"prefix"`
	Type     string `json:"type"`
	Source   string `json:"source"`
	Commit   string `json:"commit,omitempty"`
	Coverage string `json:"coverage"`
}

// CheckpointListResult lists the checkpoints, oldest first.
type CheckpointListResult struct {
	Checkpoints []CheckpointInfo `json:"checkpoints"`
}

// CheckpointDiffParams ask for the changes from checkpoint From to
// checkpoint To (empty: the workspace now), under Paths (workspace paths;
// none means all), in Format ("patch", "stat" or "name-status"), as
// workspace.diff.
type CheckpointDiffParams struct {
	From   string   `json:"from"`
	To     string   `json:"to,omitempty"`
	Paths  []string `json:"paths,omitempty"`
	Format string   `json:"format,omitempty"`
}

// CheckpointRestoreParams bring the workspace back to checkpoint ID: the
// names at and below Paths, a mount at or below one whole (none: all).
type CheckpointRestoreParams struct {
	ID    string   `json:"id"`
	Paths []string `json:"paths,omitempty"`
}

// CheckpointRestoreResult says what was restored: the mount prefixes, the
// selected mounts a checkpoint cannot hold (left as they are), and the
// workspace paths that changed since the checkpoint.
type CheckpointRestoreResult struct {
	Restored   []string `json:"restored"`
	NotCovered []string `json:"not_covered,omitempty"`
	Changed    []string `json:"changed"`
}

// CheckpointDeleteParams name the checkpoint to drop.
type CheckpointDeleteParams struct {
	ID string `json:"id"`
}

// CheckpointDeleteResult names the checkpoint dropped.
type CheckpointDeleteResult struct {
	Deleted string `json:"deleted"`
}

// errNoCheckpoints answers the checkpoint methods of a workspace without a
// Checkpointer.
const errNoCheckpoints = "this workspace has no writable layer a checkpoint can freeze (memory mounts, or git mounts made writable over memory)"

// SetCheckpointer serves the checkpoint methods from c. Call it before
// serving. Without one they answer that the workspace has nothing to
// checkpoint (invalid params: a usage error).
func (s *Server) SetCheckpointer(c Checkpointer) { s.ckpt = c }

// dispatchCheckpoint answers the checkpoint methods; ok is false for any
// other.
func (s *Server) dispatchCheckpoint(ctx context.Context, method string, decode func(any) *Error) (_ any, _ *Error, ok bool) {
	var res any
	var err error
	c := s.ckpt
	switch method {
	case "checkpoint.create":
		var p CheckpointCreateParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if c != nil {
			res, err = c.CheckpointCreate(ctx, p)
		}
	case "checkpoint.list":
		if c != nil {
			res, err = c.CheckpointList(ctx)
		}
	case "checkpoint.diff":
		var p CheckpointDiffParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if c != nil {
			res, err = c.CheckpointDiff(ctx, p)
		}
	case "checkpoint.restore":
		var p CheckpointRestoreParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if c != nil {
			res, err = c.CheckpointRestore(ctx, p)
		}
	case "checkpoint.delete":
		var p CheckpointDeleteParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if c != nil {
			res, err = c.CheckpointDelete(ctx, p)
		}
	default:
		return nil, nil, false
	}
	switch {
	case c == nil:
		return nil, &Error{rpcInvalidParams, "method " + method + ": " + errNoCheckpoints}, true
	case errors.Is(err, ErrInvalidParams):
		return nil, &Error{rpcInvalidParams, err.Error()}, true
	case err != nil:
		return nil, &Error{rpcExportFailed, err.Error()}, true
	}
	return res, nil, true
}
