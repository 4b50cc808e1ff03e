package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// TestCheckpointDiffBetweenTwo diffs two checkpoints of a writable git
// mount and a memory mount, without the kernel: git's diff of the two
// states, neither of them now.
func TestCheckpointDiffBetweenTwo(t *testing.T) {
	ctx := context.Background()
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "b.txt": "bee\n"})
	ws := openStack(t, workspaceFlags{Mounts: []string{"type=git,src=" + repo + ",dst=/repo,writable", "type=memory,dst=/memory"}})
	require.NotNil(t, ws.Checkpoints)
	c := ws.Checkpoints
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/a.txt", []byte("two\n"), 0o644))
	c1, err := c.CheckpointCreate(ctx, jsonrpc.CheckpointCreateParams{})
	require.NoError(t, err)
	require.NoError(t, mounts.Rename(ctx, ws.FS, "repo/b.txt", "repo/c.txt", 0))
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "memory/m", []byte("m\n"), 0o644))
	c2, err := c.CheckpointCreate(ctx, jsonrpc.CheckpointCreateParams{})
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/a.txt", []byte("three\n"), 0o644))

	got, err := c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: c1.ID, To: c2.ID, Format: "name-status"})
	require.NoError(t, err)
	assert.Equal(t, "A\tmemory/m\nR100\tb.txt\tc.txt\n", got.Text, "between the two: not a.txt, which changed before c1 and after c2")
	got, err = c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: c2.ID})
	require.NoError(t, err)
	assert.Contains(t, got.Text, "-two\n+three\n")
	got, err = c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: c1.ID, To: c2.ID, Paths: []string{"/memory"}, Format: "name-status"})
	require.NoError(t, err)
	assert.Equal(t, "A\tmemory/m\n", got.Text)
	_, err = c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: "c9"})
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	_, err = c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: c1.ID, Format: "html"})
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
}
