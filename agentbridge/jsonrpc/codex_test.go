package jsonrpc

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// kernelWorkspace builds what the CLI builds for a shell: a union of /repo
// and /memory, its kernel face on a temporary mountpoint, and the tool
// face over it with the shell.
func kernelWorkspace(t testing.TB, files map[string]string) *agentbridge.Workspace {
	t.Helper()
	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		if fusetest.Required() {
			t.Fatalf("bubblewrap is required with VFSMOUNT_REQUIRE_FUSE=1: %v", err)
		}
		t.Skip("bubblewrap not installed")
	}
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	for p, content := range files {
		name := mounts.NameOf(p)
		if dir, _ := mounts.Split(name); dir != "." {
			require.NoError(t, mounts.MkdirAll(ctx, mem, dir, 0o755))
		}
		require.NoError(t, mounts.WriteFile(ctx, mem, name, []byte(content), 0o644))
	}
	u, err := union.New(map[string]mounts.FS{"/repo": memfs.New(memfs.Options{}), "/memory": mem})
	require.NoError(t, err)
	mp := t.TempDir()
	srv, err := fusefs.Mount(mp, u, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, srv.Unmount()) })
	w, err := agentbridge.New(mounts.Observe(u, srv.Invalidate), agentbridge.Options{Shell: &agentbridge.ShellOptions{Mountpoint: mp}})
	require.NoError(t, err)
	require.Contains(t, w.Verbs(), agentbridge.VerbShell, "bubblewrap probe failed")
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	return w
}

// outputOf is the Output section of a codex exec result, and its session
// id ("" when the process exited).
func outputOf(t testing.TB, text string) (out, session string) {
	t.Helper()
	head, out, ok := strings.Cut(text, "Output:\n")
	require.True(t, ok, text)
	if i := strings.Index(head, "Process running with session ID "); i >= 0 {
		session = strings.TrimSpace(strings.SplitN(head[i+len("Process running with session ID "):], "\n", 2)[0])
	}
	return out, session
}

// codexClient is one JSON-RPC connection calling codex tools.
type codexClient struct {
	t *testing.T
	c *Client
}

func dialCodex(t *testing.T, sock string) *codexClient {
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	c := NewClient(conn)
	t.Cleanup(func() { c.Close() })
	return &codexClient{t: t, c: c}
}

func (cc *codexClient) call(tool string, args any) agentbridge.Result {
	cc.t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(cc.t, err)
	var res agentbridge.Result
	require.NoError(cc.t, cc.c.Call(context.Background(), "tools.call", ToolsCallParams{Name: tool, Arguments: raw, Dialect: "codex"}, &res))
	return res
}

// TestCodexOverJSONRPC: issue 17's codex items through the JSON-RPC
// transport, where a session is a connection.
func TestCodexOverJSONRPC(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"/old.txt": "from\n", "/target.txt": "overwritten\n", "/dash.txt": "a — b\n"})
	sock := serveUnix(t, w)
	one, two := dialCodex(t, sock), dialCodex(t, sock)
	var brief BriefResult
	require.NoError(t, one.c.Call(context.Background(), "workspace.brief", BriefParams{Dialect: "codex"}, &brief))
	assert.Contains(t, brief.Brief, "Tools: read_file, list_dir, grep_files, apply_patch, exec_command, write_stdin, view_image.\n", "item 9: the brief names codex's tools")
	assert.Contains(t, one.call("read_file", map[string]any{"file_path": "/memory/old.txt", "limit": 0}).Text, `read_file: argument "limit"`, "item 6: codex's names")

	t.Run("item 1: exec_command keeps a process for write_stdin of the same connection", func(t *testing.T) {
		r := one.call("exec_command", map[string]any{"cmd": "echo start; sleep 4; echo end", "yield_time_ms": 2000})
		require.False(t, r.IsError, r.Text)
		out, id := outputOf(t, r.Text)
		require.NotEmpty(t, id, r.Text)
		assert.Equal(t, "start\n", out)
		r = two.call("write_stdin", map[string]any{"session_id": id})
		assert.True(t, r.IsError, "another connection is another session")
		assert.Contains(t, r.Text, "write_stdin failed: Unknown process id "+id)
		r = one.call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 10000})
		require.False(t, r.IsError, r.Text)
		out, id = outputOf(t, r.Text)
		assert.Empty(t, id)
		assert.Equal(t, "end\n", out)
		assert.Contains(t, r.Text, "Process exited with code 0\n")
	})
	t.Run("item 2: apply_patch typed into exec_command is applied", func(t *testing.T) {
		r := one.call("exec_command", map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: typed.txt\n+typed\n*** End Patch\nEOF"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, "Wall time: 0.0000 seconds\nOutput:\nSuccess. Updated the following files:\nA /memory/typed.txt\n", r.Text)
		r = one.call("exec_command", map[string]any{"cmd": "cat /memory/typed.txt"})
		out, _ := outputOf(t, r.Text)
		assert.Equal(t, "typed\n", out)
	})
	t.Run("item 3: every exec_command starts in the session's directory; a cd does not carry", func(t *testing.T) {
		one.call("exec_command", map[string]any{"cmd": "mkdir -p /memory/sub && cd /memory/sub"})
		out, _ := outputOf(t, one.call("exec_command", map[string]any{"cmd": "pwd"}).Text)
		assert.Equal(t, "/memory\n", out, "Codex 0.171.0: a cd does not carry to the next call")
		out, _ = outputOf(t, two.call("exec_command", map[string]any{"cmd": "pwd"}).Text)
		assert.Equal(t, "/memory\n", out)
		r := one.call("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: rel.txt\n+r\n*** End Patch"})
		assert.Equal(t, "Success. Updated the following files:\nA /memory/rel.txt\n", r.Text, "nor to apply_patch's relative paths")
		assert.Equal(t, "     1\tr\n", one.call("read_file", map[string]any{"file_path": "rel.txt"}).Text)
	})
	t.Run("item 6: errors name codex's arguments", func(t *testing.T) {
		assert.Equal(t, `exec_command: missing required argument "cmd"`, one.call("exec_command", map[string]any{}).Text)
		assert.Equal(t, `write_stdin: missing required argument "session_id"`, one.call("write_stdin", map[string]any{}).Text)
		assert.Equal(t, `apply_patch: missing required argument "input"`, one.call("apply_patch", map[string]any{}).Text)
	})
	t.Run("item 7: Move to overwrites, typographic dashes match, codex's texts", func(t *testing.T) {
		r := two.call("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: /memory/old.txt\n*** Move to: /memory/target.txt\n-from\n+to\n*** Update File: /memory/dash.txt\n-a - b\n+a = b\n*** End Patch"})
		require.False(t, r.IsError, r.Text)
		assert.Equal(t, "Success. Updated the following files:\nM /memory/target.txt\nM /memory/dash.txt\n", r.Text)
		assert.Equal(t, "     1\tto\n", two.call("read_file", map[string]any{"file_path": "/memory/target.txt"}).Text)
		assert.Equal(t, "     1\ta = b\n", two.call("read_file", map[string]any{"file_path": "/memory/dash.txt"}).Text)
		r = two.call("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: /memory/dash.txt\n-nope\n+x\n*** End Patch"})
		assert.Equal(t, "apply_patch verification failed: Failed to find expected lines in /memory/dash.txt:\nnope", r.Text)
	})
	assert.False(t, strings.Contains(one.call("exec_command", map[string]any{"cmd": "true"}).Text, "Note:"))
}
