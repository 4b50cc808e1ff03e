package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
)

// fakeExport answers from what it is given and records what it was asked.
type fakeExport struct {
	diff   DiffParams
	commit CommitParams
	reset  ResetParams
}

func (f *fakeExport) Diff(_ context.Context, p DiffParams) (DiffResult, error) {
	f.diff = p
	return DiffResult{Text: "diff --git a/x b/x\n"}, nil
}

func (f *fakeExport) Commit(_ context.Context, p CommitParams) (CommitResult, error) {
	f.commit = p
	if p.Branch == "taken" {
		return CommitResult{}, errors.New(`branch "taken" already exists`)
	}
	if p.Branch == "" {
		return CommitResult{}, fmt.Errorf("%w: a branch is required", ErrInvalidParams)
	}
	return CommitResult{Commit: "abc", Ref: "refs/heads/" + p.Branch}, nil
}

func (f *fakeExport) Reset(_ context.Context, p ResetParams) (ResetResult, error) {
	f.reset = p
	return ResetResult{Reset: p.Paths}, nil
}

func TestExportMethods(t *testing.T) {
	ctx := context.Background()
	dial := func(srv *Server) *Client {
		a, b := net.Pipe()
		go func() { _ = srv.ServeStream(ctx, b, b) }()
		c := NewClient(a)
		t.Cleanup(func() { c.Close() })
		return c
	}
	fe := &fakeExport{}
	srv := NewServer(nil, nil)
	srv.SetExporter(fe)
	c := dial(srv)

	var d DiffResult
	require.NoError(t, c.Call(ctx, "workspace.diff", DiffParams{Paths: []string{"/repo/a"}, Format: "stat"}, &d))
	assert.Equal(t, "diff --git a/x b/x\n", d.Text)
	assert.Equal(t, DiffParams{Paths: []string{"/repo/a"}, Format: "stat"}, fe.diff)

	var cr CommitResult
	require.NoError(t, c.Call(ctx, "workspace.commit", CommitParams{Message: "m", Branch: "b"}, &cr))
	assert.Equal(t, CommitResult{Commit: "abc", Ref: "refs/heads/b"}, cr)

	var rpcErr *Error
	err := c.Call(ctx, "workspace.commit", CommitParams{Message: "m", Branch: "taken"}, &cr)
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, rpcExportFailed, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, `"taken"`)
	err = c.Call(ctx, "workspace.commit", CommitParams{Message: "m"}, &cr)
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, CodeInvalidParams, rpcErr.Code)

	var rr ResetResult
	require.NoError(t, c.Call(ctx, "workspace.reset", ResetParams{Paths: []string{"/repo/x"}}, &rr))
	assert.Equal(t, []string{"/repo/x"}, rr.Reset)

	err = c.Call(ctx, "tools.list", nil, &struct{}{})
	require.ErrorAs(t, err, &rpcErr, "a server without a workspace has no tools")
	assert.Equal(t, rpcMethodNotFound, rpcErr.Code)

	// A server of tools with no exporter says so for the export methods.
	plain := dial(NewServer(fixture(t, map[string]string{"/a": "x"}, agentbridge.Options{}), nil))
	err = plain.Call(ctx, "workspace.diff", nil, &d)
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, rpcMethodNotFound, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "no writable git mount")
}
