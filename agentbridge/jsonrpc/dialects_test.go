package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
)

// dialectClient is one JSON-RPC connection calling one dialect's tools.
type dialectClient struct {
	t       *testing.T
	c       *Client
	dialect string
}

func dial(t *testing.T, sock, dialect string) *dialectClient {
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	c := NewClient(conn)
	t.Cleanup(func() { c.Close() })
	return &dialectClient{t: t, c: c, dialect: dialect}
}

func (dc *dialectClient) call(tool string, args any) agentbridge.Result {
	dc.t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(dc.t, err)
	var res agentbridge.Result
	require.NoError(dc.t, dc.c.Call(context.Background(), "tools.call", ToolsCallParams{Name: tool, Arguments: raw, Dialect: dc.dialect}, &res))
	return res
}

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))))
	return b.Bytes()
}

// TestClaudeOverJSONRPC: issue 17's claude items through JSON-RPC, where
// a session is a connection.
func TestClaudeOverJSONRPC(t *testing.T) {
	img := pngBytes(t)
	w := kernelWorkspace(t, map[string]string{"/a.txt": "alpha\nbeta\n", "/pic.png": string(img)})
	sock := serveUnix(t, w)
	one, two := dial(t, sock, "claude"), dial(t, sock, "claude")

	var list ToolsListResult
	require.NoError(t, one.c.Call(context.Background(), "tools.list", ToolsListParams{Dialect: "claude"}, &list))
	var names []string
	for _, d := range list.Tools {
		names = append(names, d.Name)
	}
	assert.Equal(t, []string{"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "Bash", "TaskStop"}, names)
	var brief BriefResult
	require.NoError(t, one.c.Call(context.Background(), "workspace.brief", BriefParams{Dialect: "claude"}, &brief))
	assert.Contains(t, brief.Brief, "Tools: Read, Write, Edit, NotebookEdit, Glob, Grep, Bash, TaskStop.\n")
	assert.Contains(t, brief.Brief, "  /memory  memory, writable\n")

	t.Run("item 5: Read's line format and image content", func(t *testing.T) {
		assert.Equal(t, agentbridge.Result{Text: "1\talpha\n2\tbeta\n"}, one.call("Read", map[string]any{"file_path": "/memory/a.txt"}))
		r := one.call("Read", map[string]any{"file_path": "/memory/pic.png"})
		require.False(t, r.IsError, r.Text)
		require.Len(t, r.Content, 1)
		assert.Equal(t, agentbridge.Content{Type: "image", Data: img, MIMEType: "image/png"}, r.Content[0])
	})
	t.Run("item 5: Bash in the background, read and stopped from its connection only", func(t *testing.T) {
		r := one.call("Bash", map[string]any{"command": "echo up; sleep 600", "run_in_background": true})
		require.False(t, r.IsError, r.Text)
		id := regexp.MustCompile(`ID: (\d+)`).FindStringSubmatch(r.Text)[1]
		r = two.call("TaskOutput", map[string]any{"task_id": id, "block": false, "timeout": 0})
		assert.True(t, r.IsError)
		assert.Contains(t, r.Text, "No task found with ID: "+id)
		// Wait for the state (it printed), not for a time.
		require.Eventually(t, func() bool {
			return regexp.MustCompile(`<output>\nup\n</output>`).MatchString(one.call("TaskOutput", map[string]any{"task_id": id, "block": false, "timeout": 0}).Text)
		}, 30*time.Second, 10*time.Millisecond)
		r = one.call("TaskStop", map[string]any{"task_id": id})
		require.False(t, r.IsError, r.Text)
		assert.Contains(t, r.Text, `"message":"Successfully stopped task: `+id+` (echo up; sleep 600)"`)
		r = one.call("TaskOutput", map[string]any{"task_id": id, "block": true, "timeout": 1000})
		assert.Contains(t, r.Text, "<status>killed</status>\n<exit_code>137</exit_code>\n<output>\nup\n</output>")
		r = one.call("Bash", map[string]any{"command": "ls /nope"})
		assert.True(t, r.IsError)
		assert.Regexp(t, `^Exit code 2\nls: cannot access '/nope'`, r.Text)
	})
	t.Run("item 3/5: cd carries, Glob and Grep answer relative to it", func(t *testing.T) {
		one.call("Bash", map[string]any{"command": "mkdir -p /memory/sub && echo hit > /memory/sub/h.txt && cd /memory/sub"})
		assert.Equal(t, agentbridge.Result{Text: "h.txt"}, one.call("Glob", map[string]any{"pattern": "*.txt"}))
		assert.Equal(t, agentbridge.Result{Text: "Found 1 file\nh.txt"}, one.call("Grep", map[string]any{"pattern": "hit"}))
		assert.Equal(t, agentbridge.Result{Text: "Found 1 file\nsub/h.txt"}, two.call("Grep", map[string]any{"pattern": "hit"}), "the other connection is still in /memory")
	})
	t.Run("item 6 and bad input: errors name Claude's arguments", func(t *testing.T) {
		assert.Equal(t, agentbridge.Result{Text: `Read: missing required argument "file_path"`, IsError: true}, one.call("Read", map[string]any{}))
		assert.Equal(t, agentbridge.Result{Text: `Bash: argument "timeout" must be an integer, got "soon"`, IsError: true}, one.call("Bash", map[string]any{"command": "true", "timeout": "soon"}))
		r := one.call("Edit", map[string]any{"file_path": "/memory/a.txt", "old_string": "zeta", "new_string": "x"})
		assert.Contains(t, r.Text, "old_string not found")
		assert.Equal(t, "1\talpha\n2\tbeta\n", one.call("Read", map[string]any{"file_path": "/memory/a.txt"}).Text, "nothing changed")
	})
}

// TestCursorOverJSONRPC: issue 17's cursor items through JSON-RPC.
func TestCursorOverJSONRPC(t *testing.T) {
	w := kernelWorkspace(t, map[string]string{"/src/a.go": "package a\n// hit\n", "/src/b.go": "package b\n"})
	sock := serveUnix(t, w)
	c := dial(t, sock, "cursor")
	t.Run("item 4: the SDK's argument names", func(t *testing.T) {
		assert.Equal(t, agentbridge.Result{Text: "/memory/src/a.go:2:// hit\n"}, c.call("grep", map[string]any{"pattern": "hit", "path": "/memory"}))
		assert.Equal(t, agentbridge.Result{Text: "/memory/src/a.go\n"}, c.call("grep", map[string]any{"pattern": "hit", "outputMode": "files_with_matches"}))
		assert.Equal(t, agentbridge.Result{Text: "/memory/src/a.go-1-package a\n/memory/src/a.go:2:// hit\n"}, c.call("grep", map[string]any{"pattern": "hit", "contextBefore": 1}))
		r := c.call("glob", map[string]any{"globPattern": "*.go", "targetDirectory": "/memory/src"})
		assert.ElementsMatch(t, []string{"/memory/src/a.go", "/memory/src/b.go"}, splitLines(r.Text))
		assert.Equal(t, "exit code: 0\n--- stdout ---\n/memory/src\n", c.call("shell", map[string]any{"command": "pwd", "workingDirectory": "/memory/src"}).Text)
		assert.Equal(t, "src/\nsrc/a.go\nsrc/b.go\n", c.call("ls", map[string]any{"path": "/memory"}).Text)
		r = c.call("grep", map[string]any{"pattern": "hit", "output_mode": "content"})
		assert.Equal(t, agentbridge.Result{Text: `grep: unknown argument "output_mode"; grep takes caseInsensitive, context, contextAfter, contextBefore, glob, headLimit, lineNumbers, multiline, noIgnore, offset, outputMode, path, pattern, sort, sortAscending, type`, IsError: true}, r)
	})
}

func splitLines(s string) []string {
	var out []string
	for _, l := range bytes.Split(bytes.TrimSuffix([]byte(s), []byte("\n")), []byte("\n")) {
		out = append(out, string(l))
	}
	return out
}
