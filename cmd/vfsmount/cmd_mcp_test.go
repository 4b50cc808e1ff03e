package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPCommandStdio runs the real binary as an MCP server and talks to
// it with the SDK client over its stdio.
func TestMCPCommandStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vfsmount")
	build := exec.Command("go", "build", "-tags", "mcp", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--mount", "type=memory,dst=/memory", "--dialect", "claude")}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Contains(t, cs.InitializeResult().Instructions, "/memory")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Write", Arguments: map[string]any{"file_path": "/memory/a", "content": "x"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "cat /memory/a"}})
	require.NoError(t, err)
	assert.Equal(t, "x", res.Content[0].(*mcp.TextContent).Text, "Claude Code's Bash result: the output alone")
}

// TestHelpMCPNamesServerVfsmount: the config `vfsmount help mcp` shows is
// one Claude Code loads: the server is not called workspace.
func TestHelpMCPNamesServerVfsmount(t *testing.T) {
	code, out, errOut := runTool(context.Background(), "help", "mcp")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `{"mcpServers": {"vfsmount": {"command": "vfsmount",`)
	assert.NotContains(t, out, `"workspace": {`)
	assert.Contains(t, out, `claude --tools ""`)
	assert.Contains(t, out, "default_tools_approval_mode")
}
