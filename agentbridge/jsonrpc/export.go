package jsonrpc

import (
	"context"
	"errors"
)

// Exporter serves the workspace.diff, workspace.commit and workspace.reset
// methods: the changes of the workspace's writable git mounts against their
// pinned commits. It is not a tool: the model reaches changes through the
// shell and its authored tools, a person or a harness through these.
type Exporter interface {
	Diff(ctx context.Context, p DiffParams) (DiffResult, error)
	Commit(ctx context.Context, p CommitParams) (CommitResult, error)
	Reset(ctx context.Context, p ResetParams) (ResetResult, error)
}

// ErrInvalidParams is wrapped by an [Exporter]'s errors for requests that
// are bad input (an unknown path, a bad branch name): they are answered
// with the invalid-params code, and the CLI exits 2 on them.
var ErrInvalidParams = errors.New("invalid params")

// DiffParams ask for the changes under Paths (workspace paths; none means
// every writable git mount) in Format: "patch" (default), "stat" or
// "name-status".
type DiffParams struct {
	Paths  []string `json:"paths,omitempty"`
	Format string   `json:"format,omitempty"`
}

// DiffResult is the diff text; empty when nothing changed.
type DiffResult struct {
	Text string `json:"text"`
}

// CommitParams commit the changes of the writable git mount at Dst (may be
// omitted when there is one) as a commit on its pinned commit, on
// refs/heads/Branch of its source repository.
type CommitParams struct {
	Dst     string `json:"dst,omitempty"`
	Message string `json:"message"`
	Branch  string `json:"branch"`
	Force   bool   `json:"force,omitempty"`
}

// CommitResult names the commit made; Commit is empty when there was no
// change to commit.
type CommitResult struct {
	Commit string `json:"commit,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// ResetParams discard the changes at and below Paths (workspace paths;
// none means every change of every writable git mount).
type ResetParams struct {
	Paths []string `json:"paths,omitempty"`
}

// ResetResult lists the workspace paths reset.
type ResetResult struct {
	Reset []string `json:"reset"`
}

// SetExporter serves the export methods from e. Call it before serving.
func (s *Server) SetExporter(e Exporter) { s.export = e }

// dispatchExport answers the export methods; ok is false for any other.
func (s *Server) dispatchExport(ctx context.Context, method string, decode func(any) *Error) (_ any, _ *Error, ok bool) {
	var res any
	var err error
	switch method {
	case "workspace.diff":
		var p DiffParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if s.export != nil {
			res, err = s.export.Diff(ctx, p)
		}
	case "workspace.commit":
		var p CommitParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if s.export != nil {
			res, err = s.export.Commit(ctx, p)
		}
	case "workspace.reset":
		var p ResetParams
		if e := decode(&p); e != nil {
			return nil, e, true
		}
		if s.export != nil {
			res, err = s.export.Reset(ctx, p)
		}
	default:
		return nil, nil, false
	}
	switch {
	case s.export == nil:
		return nil, &Error{rpcMethodNotFound, "method " + method + ": this workspace has no writable git mount"}, true
	case errors.Is(err, ErrInvalidParams):
		return nil, &Error{rpcInvalidParams, err.Error()}, true
	case err != nil:
		return nil, &Error{rpcExportFailed, err.Error()}, true
	}
	return res, nil, true
}
