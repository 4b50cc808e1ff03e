package mcpserver

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// mcpSession connects one MCP client session to srv.
func mcpSession(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestCodexOverMCP: issue 17's codex items through the MCP transport,
// where a session is an MCP session.
func TestCodexOverMCP(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"/old.txt": "from\n", "/target.txt": "overwritten\n", "/dash.txt": "a — b\n"})
	srv, err := New(w, "codex", nil)
	require.NoError(t, err)
	one, two := mcpSession(t, srv), mcpSession(t, srv)

	list, err := one.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.ElementsMatch(t, []string{"read_file", "list_dir", "grep_files", "apply_patch", "exec_command", "write_stdin", "view_image"}, names)
	assert.Contains(t, one.InitializeResult().Instructions, "Tools: read_file, list_dir, grep_files, apply_patch, exec_command, write_stdin, view_image.\n", "item 9: the brief names codex's tools")

	t.Run("item 1: exec_command keeps a process for write_stdin of the same MCP session", func(t *testing.T) {
		text, isErr := callText(t, one, "exec_command", map[string]any{"cmd": "echo start; sleep 4; echo end", "yield_time_ms": 2000})
		require.False(t, isErr, text)
		out, id := outputOf(t, text)
		require.NotEmpty(t, id, text)
		assert.Equal(t, "start\n", out)
		text, isErr = callText(t, two, "write_stdin", map[string]any{"session_id": id})
		assert.True(t, isErr, "another MCP session is another session")
		assert.Contains(t, text, "write_stdin failed: Unknown process id "+id)
		text, isErr = callText(t, one, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 10000})
		require.False(t, isErr, text)
		out, id = outputOf(t, text)
		assert.Empty(t, id)
		assert.Equal(t, "end\n", out)
	})
	t.Run("item 2: apply_patch typed into exec_command is applied", func(t *testing.T) {
		text, isErr := callText(t, one, "exec_command", map[string]any{"cmd": "bash -lc \"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: typed.txt\n+typed\n*** End Patch\nEOF\""})
		// A nested bash -lc inside cmd is a command like any other: codex
		// recognises the patch only as the whole command.
		assert.False(t, isErr, text)
		assert.Contains(t, text, "apply_patch: command not found")
		text, isErr = callText(t, one, "exec_command", map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: typed.txt\n+typed\n*** End Patch\nEOF"})
		require.False(t, isErr, text)
		assert.Equal(t, "Wall time: 0.0000 seconds\nOutput:\nSuccess. Updated the following files:\nA /memory/typed.txt\n", text)
	})
	t.Run("item 3: every exec_command starts in the session's directory; a cd does not carry", func(t *testing.T) {
		callText(t, one, "exec_command", map[string]any{"cmd": "mkdir -p /memory/sub && cd /memory/sub"})
		text, _ := callText(t, one, "exec_command", map[string]any{"cmd": "pwd"})
		out, _ := outputOf(t, text)
		assert.Equal(t, "/memory\n", out, "Codex 0.171.0: a cd does not carry to the next call")
		text, _ = callText(t, two, "exec_command", map[string]any{"cmd": "pwd"})
		out, _ = outputOf(t, text)
		assert.Equal(t, "/memory\n", out)
		text, _ = callText(t, one, "list_dir", map[string]any{"dir_path": "sub"})
		assert.Equal(t, "(/memory/sub is empty)", text)
	})
	t.Run("item 6: errors name codex's arguments", func(t *testing.T) {
		text, isErr := callText(t, one, "exec_command", map[string]any{"cmd": "true", "workdir": 5})
		assert.True(t, isErr)
		assert.Equal(t, `exec_command: argument "workdir" must be a string, got 5`, text)
	})
	t.Run("item 7: Move to overwrites, typographic dashes match, codex's texts", func(t *testing.T) {
		text, isErr := callText(t, two, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: /memory/old.txt\n*** Move to: /memory/target.txt\n-from\n+to\n*** Update File: /memory/dash.txt\n-a - b\n+a = b\n*** End Patch"})
		require.False(t, isErr, text)
		assert.Equal(t, "Success. Updated the following files:\nM /memory/target.txt\nM /memory/dash.txt\n", text)
		text, _ = callText(t, two, "read_file", map[string]any{"file_path": "/memory/target.txt"})
		assert.Equal(t, "     1\tto\n", text)
	})

}
