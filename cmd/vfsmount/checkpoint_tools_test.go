package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

var noteID = regexp.MustCompile(`\[checkpoint (c\d+) was taken before this call`)

// TestCheckpointToolsRewindAShellCommand serves a workspace whose config
// takes a checkpoint before every write and shell call and offers the
// checkpoint tools: a shell command that edits, deletes and renames files
// is rewound to the checkpoint its result names, and the kernel face shows
// the restored files at once.
func TestCheckpointToolsRewindAShellCommand(t *testing.T) {
	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	dir := t.TempDir()
	repo, _ := testutil.GitRepo(t, map[string]string{"a.txt": "one\n", "dir/b.txt": "bee\n"})
	cfg := filepath.Join(dir, "ws.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
mounts:
  - {type: git, src: `+repo+`, dst: /repo, writable: true}
  - {type: memory, dst: /memory}
checkpoint: {before: [write, shell], keep: 10, tools: true}
`), 0o644))
	sock := filepath.Join(dir, "ws.sock")
	mp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, _ := runTool(ctx, "serve", "--config", cfg, "--listen", "unix:"+sock, "--mountpoint", mp)
		done <- code
	}()
	var conn net.Conn
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", sock)
		conn = c
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	c := jsonrpc.NewClient(conn)
	defer func() {
		c.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	call := func(tool, args string) agentbridge.Result {
		t.Helper()
		var r agentbridge.Result
		require.NoError(t, c.Call(ctx, "tools.call", jsonrpc.ToolsCallParams{Name: tool, Arguments: json.RawMessage(args)}, &r))
		return r
	}
	var defs jsonrpc.ToolsListResult
	require.NoError(t, c.Call(ctx, "tools.list", jsonrpc.ToolsListParams{}, &defs))
	names := map[string]agentbridge.Annotations{}
	for _, d := range defs.Tools {
		names[d.Name] = d.Annotations
	}
	require.Contains(t, names, "checkpoint_restore")
	assert.True(t, names["checkpoint_restore"].Destructive)

	r := call("write", `{"path":"/memory/notes","fileText":"v1"}`)
	require.False(t, r.IsError, r.Text)
	require.Regexp(t, noteID, r.Text, "a write says which checkpoint undoes it")
	r = call("shell", `{"command":"cd /repo && echo edited > a.txt && rm dir/b.txt && mv a.txt renamed.txt && echo v2 > /memory/notes"}`)
	require.False(t, r.IsError, r.Text)
	m := noteID.FindStringSubmatch(r.Text)
	require.NotNil(t, m, r.Text)
	before := m[1]
	got, err := os.ReadFile(filepath.Join(mp, "repo/renamed.txt"))
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(got))

	r = call("checkpoint_diff", `{"id":"`+before+`"}`)
	require.False(t, r.IsError, r.Text)
	assert.Contains(t, r.Text, "renamed.txt")
	assert.Contains(t, r.Text, "memory/notes")

	r = call("checkpoint_restore", `{"id":"`+before+`"}`)
	require.False(t, r.IsError, r.Text)
	assert.NotRegexp(t, noteID, r.Text, "restore is not among checkpoint.before")
	for name, want := range map[string]string{"repo/a.txt": "one\n", "repo/dir/b.txt": "bee\n", "memory/notes": "v1"} {
		got, err := os.ReadFile(filepath.Join(mp, name))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(got), "the kernel face shows %s restored at once", name)
	}
	_, err = os.Stat(filepath.Join(mp, "repo/renamed.txt"))
	assert.True(t, os.IsNotExist(err), "the rename is undone")

	r = call("checkpoint_restore", `{"id":"c404"}`)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, `"c404"`)

	// The JSON-RPC methods reach the same checkpoints.
	var list jsonrpc.CheckpointListResult
	require.NoError(t, c.Call(ctx, "checkpoint.list", nil, &list))
	assert.Len(t, list.Checkpoints, 2)
}
