package workspace_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/workspace"
)

// readOnly hides every capability of the mount it wraps.
type readOnly struct{ mounts.FS }

// ownMount is a mount of a program's own that freezes by delegating to a
// memory tree: the services find the capability, whatever the type.
type ownMount struct{ *memfs.FS }

func TestOpenRefusesBadOptions(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	_, err := workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{{Prefix: "/a", FS: mem}, {Prefix: "/a", FS: mem}}})
	assert.ErrorContains(t, err, "/a is mounted twice")
	_, err = workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{{Prefix: "a", FS: mem}}})
	assert.ErrorContains(t, err, "mount table")
	_, err = workspace.Open(ctx, workspace.Options{
		Mounts:     []workspace.Mount{{Prefix: "/ro", FS: readOnly{mem}}},
		Checkpoint: workspace.CheckpointOptions{Tools: true},
	})
	assert.ErrorIs(t, err, workspace.ErrNoWritable, "checkpoint tools with nothing to freeze fail closed")
}

func TestServicesFindCapabilities(t *testing.T) {
	ctx := context.Background()
	own := ownMount{memfs.New(memfs.Options{})}
	ws, err := workspace.Open(ctx, workspace.Options{
		Mounts:     []workspace.Mount{{Prefix: "/own", FS: own}, {Prefix: "/ro", FS: readOnly{memfs.New(memfs.Options{})}}},
		Checkpoint: workspace.CheckpointOptions{Tools: true},
	})
	require.NoError(t, err)
	defer ws.Close()
	require.NotNil(t, ws.Checkpoints, "a mount of any type that freezes gets checkpoints")
	assert.Nil(t, ws.Export, "nothing exports")

	tools, err := ws.ToolFace(agentbridge.Options{})
	require.NoError(t, err)
	defer tools.Close()
	call := func(tool, args string) agentbridge.Result {
		return tools.Call(ctx, agentbridge.DialectCursor, tool, []byte(args))
	}
	require.False(t, call("write", `{"path":"/own/a","fileText":"one"}`).IsError)
	info, err := ws.Checkpoints.Create(ctx, "")
	require.NoError(t, err)
	require.False(t, call("write", `{"path":"/own/a","fileText":"two"}`).IsError)
	r, err := ws.Checkpoints.Restore(ctx, info.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"/own/a"}, r.Changed)
	res := call("read", `{"path":"/own/a"}`)
	assert.Contains(t, res.Text, "one", "the tool face sees the restore")
	assert.Contains(t, call("checkpoint_list", `{}`).Text, info.ID)
}
