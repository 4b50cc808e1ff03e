package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// TestInProcessClient initialises an MCP client against the server over
// in-memory transports, lists the tools and calls them.
func TestInProcessClient(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, mem, "hello.txt", []byte("hi\n"), 0o644))
	u, err := union.New(map[string]mounts.FS{"/": mem})
	require.NoError(t, err)
	w, err := agentbridge.New(u, agentbridge.Options{})
	require.NoError(t, err)

	for _, dialect := range []string{"cursor", "claude"} {
		t.Run(dialect, func(t *testing.T) {
			srv, err := New(w, dialect, nil)
			require.NoError(t, err)
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			require.NoError(t, err)
			defer ss.Close()
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
			cs, err := client.Connect(ctx, ct, nil)
			require.NoError(t, err)
			defer cs.Close()

			assert.Equal(t, w.BriefFor(dialect), cs.InitializeResult().Instructions)
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			defs, err := w.Tools(dialect)
			require.NoError(t, err)
			require.Len(t, list.Tools, len(defs))
			byName := map[string]*mcp.Tool{}
			for _, tool := range list.Tools {
				byName[tool.Name] = tool
			}
			read, write, line := "read", "write", "     1\thi\n"
			args := map[string]any{"path": "/hello.txt"}
			wargs := map[string]any{"path": "/new.txt", "fileText": "x"}
			if dialect == "claude" {
				read, write, line = "Read", "Write", "1\thi\n"
				args = map[string]any{"file_path": "/hello.txt"}
				wargs = map[string]any{"file_path": "/new.txt", "content": "x"}
			}
			require.Contains(t, byName, read)
			assert.True(t, byName[read].Annotations.ReadOnlyHint)
			assert.True(t, byName[read].Annotations.IdempotentHint)
			assert.False(t, byName[write].Annotations.ReadOnlyHint)
			require.NotNil(t, byName[write].Annotations.DestructiveHint)
			assert.True(t, *byName[write].Annotations.DestructiveHint)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: read, Arguments: args})
			require.NoError(t, err)
			assert.False(t, res.IsError)
			require.Len(t, res.Content, 1)
			assert.Equal(t, line, res.Content[0].(*mcp.TextContent).Text)

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: write, Arguments: wargs})
			require.NoError(t, err)
			assert.False(t, res.IsError, "%v", res.Content)

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: read, Arguments: json.RawMessage(`{}`)})
			require.NoError(t, err)
			assert.True(t, res.IsError, "a tool error is a result, not a protocol error")
		})
	}
}
