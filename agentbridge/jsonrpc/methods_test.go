package jsonrpc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// noCheckpoints answers every checkpoint method with nothing.
type noCheckpoints struct{}

func (noCheckpoints) CheckpointCreate(context.Context, CheckpointCreateParams) (CheckpointInfo, error) {
	return CheckpointInfo{}, nil
}
func (noCheckpoints) CheckpointList(context.Context) (CheckpointListResult, error) {
	return CheckpointListResult{}, nil
}
func (noCheckpoints) CheckpointDiff(context.Context, CheckpointDiffParams) (DiffResult, error) {
	return DiffResult{}, nil
}
func (noCheckpoints) CheckpointRestore(context.Context, CheckpointRestoreParams) (CheckpointRestoreResult, error) {
	return CheckpointRestoreResult{}, nil
}
func (noCheckpoints) CheckpointDelete(context.Context, CheckpointDeleteParams) (CheckpointDeleteResult, error) {
	return CheckpointDeleteResult{}, nil
}

// TestMethodsAreAnswered: every method of Methods is dispatched by a server
// that has what it needs, and a name that is not one is not.
func TestMethodsAreAnswered(t *testing.T) {
	ws, err := agentbridge.New(memfs.New(memfs.Options{}), agentbridge.Options{})
	require.NoError(t, err)
	defer ws.Close()
	srv := NewServer(ws, nil)
	srv.SetExporter(&fakeExport{})
	srv.SetCheckpointer(noCheckpoints{})
	for _, m := range Methods {
		_, e := srv.dispatch(context.Background(), m, nil)
		if e != nil {
			assert.NotEqual(t, rpcMethodNotFound, e.Code, "%s: %s", m, e.Message)
		}
	}
	_, e := srv.dispatch(context.Background(), "tools.nothing", nil)
	require.NotNil(t, e)
	assert.Equal(t, rpcMethodNotFound, e.Code)
}
