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

// TestExporter drives the exporter in-process, as the library and JSON-RPC
// reach it: the changes a shell cannot make cheaply to check (an opaque
// directory, a renamed one with changes inside, a mode-only directory
// change) come out as git sees them.
func TestExporter(t *testing.T) {
	ctx := context.Background()
	dir, _ := testutil.GitRepo(t, map[string]string{
		"a.txt": "a\n", "d/b.txt": "b\n", "d/sub/c.txt": "c\n", "o/x.txt": "x\n", "keep/k.txt": "k\n",
	})
	ws, err := buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable", "type=memory,dst=/memory")
	require.NoError(t, err)
	defer ws.Close()
	require.NotNil(t, ws.Export)
	var notified []string
	ws.NotifyKernel(func(names ...string) { notified = append(notified, names...) })
	fsys := ws.FS

	none, err := ws.Export.Diff(ctx, jsonrpc.DiffParams{})
	require.NoError(t, err)
	assert.Empty(t, none.Text)
	res, err := ws.Export.Commit(ctx, jsonrpc.CommitParams{Message: "m", Branch: "b"})
	require.NoError(t, err)
	assert.Empty(t, res.Commit, "no changes, no commit")

	require.NoError(t, mounts.Rename(ctx, fsys, "repo/d", "repo/e", 0))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "repo/e/sub/c.txt", []byte("C\n"), 0o644))
	require.NoError(t, mounts.RemoveAll(ctx, fsys, "repo/o"))
	require.NoError(t, mounts.Mkdir(ctx, fsys, "repo/o", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "repo/o/y.txt", []byte("y\n"), 0o644))
	require.NoError(t, mounts.Chmod(ctx, fsys, "repo/keep", 0o700))

	got, err := ws.Export.Diff(ctx, jsonrpc.DiffParams{Format: "name-status"})
	require.NoError(t, err)
	assert.Equal(t, "D\td/sub/c.txt\nR100\td/b.txt\te/b.txt\nA\te/sub/c.txt\nD\to/x.txt\nA\to/y.txt\n", got.Text)
	got, err = ws.Export.Diff(ctx, jsonrpc.DiffParams{Format: "name-status", Paths: []string{"/repo/o"}})
	require.NoError(t, err)
	assert.Equal(t, "D\to/x.txt\nA\to/y.txt\n", got.Text)

	for _, bad := range []jsonrpc.DiffParams{{Format: "html"}, {Paths: []string{"/memory/x"}}, {Paths: []string{"repo"}}} {
		_, err := ws.Export.Diff(ctx, bad)
		assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams, "%+v", bad)
	}
	_, err = ws.Export.Commit(ctx, jsonrpc.CommitParams{Message: "m", Branch: "b", Dst: "/memory"})
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)

	_, err = ws.Export.Reset(ctx, jsonrpc.ResetParams{Paths: []string{"/repo/e/sub/c.txt"}})
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams, "inside a renamed directory")
	notified = nil
	r, err := ws.Export.Reset(ctx, jsonrpc.ResetParams{Paths: []string{"/repo/e"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"/repo/e"}, r.Reset)
	assert.Contains(t, notified, "repo/e/sub/c.txt", "the kernel drops the caches of every changed name below")
	assert.Contains(t, notified, "repo/d", "and of where the directory came from")
	got, err = ws.Export.Diff(ctx, jsonrpc.DiffParams{Format: "name-status"})
	require.NoError(t, err)
	assert.Equal(t, "D\td/b.txt\nD\td/sub/c.txt\nD\to/x.txt\nA\to/y.txt\n", got.Text)

	_, err = ws.Export.Reset(ctx, jsonrpc.ResetParams{})
	require.NoError(t, err)
	got, err = ws.Export.Diff(ctx, jsonrpc.DiffParams{})
	require.NoError(t, err)
	assert.Empty(t, got.Text)
	b, err := mounts.ReadFile(ctx, fsys, "repo/d/sub/c.txt")
	require.NoError(t, err)
	assert.Equal(t, "c\n", string(b))
}
