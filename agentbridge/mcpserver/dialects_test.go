package mcpserver

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func callContent(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return res
}

// TestClaudeOverMCP: issue 17's claude items through MCP, where a session
// is an MCP session.
func TestClaudeOverMCP(t *testing.T) {
	var img bytes.Buffer
	require.NoError(t, png.Encode(&img, image.NewGray(image.Rect(0, 0, 1, 1))))
	w := kernelWorkspace(t, map[string]string{"/a.txt": "alpha\n", "/pic.png": img.String(),
		"/nb.ipynb": `{"cells":[{"cell_type":"code","id":"c1","source":"x","outputs":[{"output_type":"display_data","data":{"image/png":"iVBORw0KGgo="}}]}]}`})
	srv, err := New(w, "claude", nil)
	require.NoError(t, err)
	one, two := mcpSession(t, srv), mcpSession(t, srv)

	init := one.InitializeResult()
	assert.Contains(t, init.Instructions, "Tools: Read, Write, Edit, NotebookEdit, Glob, Grep, Bash, TaskStop.\n")
	assert.NotContains(t, init.Instructions, "memory, memory")
	list, err := one.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		assert.NotContains(t, tool.Description, "oldText", tool.Name)
		switch tool.Name {
		case "Bash", "TaskStop":
			assert.True(t, *tool.Annotations.DestructiveHint, tool.Name)
		}
	}
	assert.ElementsMatch(t, []string{"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "Bash", "TaskStop"}, names)

	t.Run("item 5: Read of an image is MCP image content", func(t *testing.T) {
		res := callContent(t, one, "Read", map[string]any{"file_path": "/memory/pic.png"})
		require.False(t, res.IsError)
		require.Len(t, res.Content, 1)
		ic, ok := res.Content[0].(*mcp.ImageContent)
		require.True(t, ok, "%T", res.Content[0])
		assert.Equal(t, "image/png", ic.MIMEType)
		assert.Equal(t, img.Bytes(), ic.Data)
		res = callContent(t, one, "Read", map[string]any{"file_path": "/memory/nb.ipynb"})
		require.Len(t, res.Content, 2)
		assert.Equal(t, `<cell id="c1">x</cell id="c1">`, res.Content[0].(*mcp.TextContent).Text)
		assert.Equal(t, []byte("\x89PNG\r\n\x1a\n"), res.Content[1].(*mcp.ImageContent).Data)
	})
	t.Run("item 5: a background Bash belongs to its MCP session", func(t *testing.T) {
		text, isErr := callText(t, one, "Bash", map[string]any{"command": "echo up; sleep 600", "run_in_background": true})
		require.False(t, isErr, text)
		id := regexp.MustCompile(`ID: (\d+)`).FindStringSubmatch(text)[1]
		file := regexp.MustCompile(`Output is being written to: (\S+)\.`).FindStringSubmatch(text)
		require.NotNil(t, file, text)
		text, isErr = callText(t, two, "TaskStop", map[string]any{"task_id": id})
		assert.True(t, isErr)
		assert.Contains(t, text, "No task found with ID: "+id)
		require.Eventually(t, func() bool {
			text, _ := callText(t, one, "Read", map[string]any{"file_path": file[1]})
			return text == "1\tup\n"
		}, 30*time.Second, 10*time.Millisecond, "the task's output file, read with Read")
		text, isErr = callText(t, two, "Read", map[string]any{"file_path": file[1]})
		assert.True(t, isErr, "another session's task")
		assert.Contains(t, text, "No task found with ID: "+id)
		text, isErr = callText(t, one, "TaskStop", map[string]any{"task_id": id})
		require.False(t, isErr, text)
		text, isErr = callText(t, one, "Bash", map[string]any{"command": "false"})
		assert.True(t, isErr)
		assert.Equal(t, "Exit code 1", text)
	})
	t.Run("item 6: errors and hints in Claude's names", func(t *testing.T) {
		text, isErr := callText(t, one, "Write", map[string]any{"file_path": "/memory/w.txt"})
		assert.True(t, isErr)
		assert.Equal(t, `Write: missing required argument "content"`, text)
		text, _ = callText(t, one, "Read", map[string]any{"file_path": "/memory/a.txt", "limit": 0})
		assert.Contains(t, text, `Read: argument "limit" must be between 1`)
	})
}

// TestCursorOverMCP: issue 17's cursor items through MCP.
func TestCursorOverMCP(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"/src/a.go": "package a\n// hit\n"})
	srv, err := New(w, "cursor", nil)
	require.NoError(t, err)
	cs := mcpSession(t, srv)
	assert.Contains(t, cs.InitializeResult().Instructions, "Tools: read, ls, glob, grep, write, edit, delete, shell.\n")
	text, _ := callText(t, cs, "glob", map[string]any{"globPattern": "**/*.go", "targetDirectory": "/memory"})
	assert.Equal(t, "/memory/src/a.go\n", text)
	text, _ = callText(t, cs, "grep", map[string]any{"pattern": "hit", "path": "/memory", "outputMode": "files_with_matches"})
	assert.Equal(t, "/memory/src/a.go\n", text)
	text, _ = callText(t, cs, "grep", map[string]any{"pattern": "hit", "path": "/memory", "contextAfter": 0})
	assert.Equal(t, "/memory/src/a.go:2:// hit\n", text)
	text, _ = callText(t, cs, "shell", map[string]any{"command": "pwd", "workingDirectory": "src"})
	assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory/src\n", text)
	text, _ = callText(t, cs, "ls", map[string]any{"path": "/memory"})
	assert.Equal(t, "src/\nsrc/a.go\n", text)
	text, isErr := callText(t, cs, "glob", map[string]any{"globPattern": "*", "recursive": true})
	assert.True(t, isErr)
	assert.Equal(t, `glob: unknown argument "recursive"; glob takes globPattern, limit, targetDirectory`, text)
}
