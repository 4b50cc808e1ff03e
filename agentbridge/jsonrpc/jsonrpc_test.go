package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

type obj = map[string]any

// fixture builds a workspace over one writable memory mount at /, seeded
// with files (workspace path -> content).
func fixture(t testing.TB, files map[string]string, opts agentbridge.Options) *agentbridge.Workspace {
	t.Helper()
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	for p, content := range files {
		name := mounts.NameOf(p)
		if dir, _ := mounts.Split(name); dir != "." {
			require.NoError(t, mounts.MkdirAll(ctx, mem, dir, 0o755))
		}
		require.NoError(t, mounts.WriteFile(ctx, mem, name, []byte(content), 0o644))
	}
	u, err := union.New(map[string]mounts.FS{"/": mem})
	require.NoError(t, err)
	w, err := agentbridge.New(u, opts)
	require.NoError(t, err)
	return w
}

func serveUnix(t testing.TB, w *agentbridge.Workspace) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ws.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(w, nil).ServeListener(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return sock
}

func TestJSONRPCConcurrentCallers(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a.txt": "shared\n"}, agentbridge.Options{})
	sock := serveUnix(t, w)
	ctx := context.Background()
	const callers = 16
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("unix", sock)
			if err != nil {
				errs <- err
				return
			}
			c := NewClient(conn)
			defer c.Close()
			for j := range 20 {
				p := fmt.Sprintf("/memory/c%d/f%d.txt", i, j)
				body := fmt.Sprintf("caller %d call %d", i, j)
				var res agentbridge.Result
				args, _ := json.Marshal(obj{"path": p, "fileText": body})
				if err := c.Call(ctx, "tools.call", ToolsCallParams{Name: "write", Arguments: args}, &res); err != nil || res.IsError {
					errs <- fmt.Errorf("write %s: %v %v", p, err, res.Text)
					return
				}
				args, _ = json.Marshal(obj{"path": p})
				if err := c.Call(ctx, "tools.call", ToolsCallParams{Name: "read", Arguments: args}, &res); err != nil || res.Text != "     1\t"+body+"\n" {
					errs <- fmt.Errorf("read %s: %v %q", p, err, res.Text)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	got := w.Call(ctx, "", "glob", json.RawMessage(`{"pattern": "**/*.txt", "path": "/memory", "limit": 10000}`))
	require.False(t, got.IsError, got.Text)
	assert.Equal(t, callers*20, strings.Count(got.Text, "\n"))
}

func TestJSONRPCMethods(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a.txt": "x\n"}, agentbridge.Options{})
	ctx := context.Background()
	conn, err := net.Dial("unix", serveUnix(t, w))
	require.NoError(t, err)
	c := NewClient(conn)
	defer c.Close()

	var list ToolsListResult
	require.NoError(t, c.Call(ctx, "tools.list", ToolsListParams{Dialect: "claude"}, &list))
	assert.Equal(t, "Read", list.Tools[0].Name)
	var brief BriefResult
	require.NoError(t, c.Call(ctx, "workspace.brief", nil, &brief))
	assert.Equal(t, w.Brief(), brief.Brief)
	var res agentbridge.Result
	require.NoError(t, c.Call(ctx, "tools.call", ToolsCallParams{Name: "read", Arguments: json.RawMessage(`{"path":"/nope"}`)}, &res))
	assert.True(t, res.IsError, "a tool error is a result")
	err = c.Call(ctx, "tools.frob", nil, nil)
	var rpcErr *Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, rpcMethodNotFound, rpcErr.Code)
	err = c.Call(ctx, "tools.call", obj{"name": 5}, nil)
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, rpcInvalidParams, rpcErr.Code)
}

func TestJSONRPCRawStream(t *testing.T) {
	w := fixture(t, map[string]string{"/repo/a.txt": "x\n"}, agentbridge.Options{})
	in := strings.Join([]string{
		`{not json`,
		`{"jsonrpc":"2.0","method":"workspace.brief"}`, // a notification: no answer
		`{"jsonrpc":"1.0","id":1,"method":"tools.list"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools.list"},{"jsonrpc":"2.0","id":3,"method":"nope"}]`,
	}, "\n")
	var out bytes.Buffer
	require.NoError(t, NewServer(w, nil).ServeStream(context.Background(), strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	joined := out.String()
	assert.Contains(t, joined, `"code":-32700`)
	assert.Contains(t, joined, `"id":1,"error":{"code":-32600`)
	assert.Contains(t, joined, `"id":3,"error":{"code":-32601`)
	assert.Contains(t, joined, `"id":2,"result":{"tools":[`)
}

// TestJSONRPCFraming: blank lines and CRLF endings are accepted, and a
// message over the limit ends the connection with an error after the
// messages before it were answered.
func TestJSONRPCFraming(t *testing.T) {
	w := fixture(t, nil, agentbridge.Options{})
	srv := NewServer(w, nil)
	srv.maxMessage = 4 << 10
	in := "\n  \r\n" + `{"jsonrpc":"2.0","id":1,"method":"workspace.brief"}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"method":"workspace.brief","params":"` + strings.Repeat("x", srv.maxMessage) + `"}` + "\n"
	var out bytes.Buffer
	err := srv.ServeStream(context.Background(), strings.NewReader(in), &out)
	assert.EqualError(t, err, "json-rpc message over 4096 bytes")
	assert.Equal(t, 1, strings.Count(out.String(), "\n"))
	assert.True(t, strings.HasPrefix(out.String(), `{"jsonrpc":"2.0","id":1,"result":{"brief":`), out.String())
}

// TestCallIDs: a JSON-RPC call's id is its request id, per connection.
func TestCallIDs(t *testing.T) {
	ids := make(chan string, 4)
	w := fixture(t, nil, agentbridge.Options{AfterCall: func(_ context.Context, c *agentbridge.CallInfo, _ agentbridge.Result, _ time.Duration) {
		ids <- c.ID
	}})
	srv := NewServer(w, nil)
	for conn := 1; conn <= 2; conn++ {
		a, b := net.Pipe()
		go func() { _ = srv.ServeStream(context.Background(), b, b) }()
		fmt.Fprintf(a, `{"jsonrpc":"2.0","id":"x7","method":"tools.call","params":{"name":"ls","arguments":{"path":"/"}}}`+"\n")
		_, err := bufio.NewReader(a).ReadString('\n')
		require.NoError(t, err)
		a.Close()
		assert.Equal(t, fmt.Sprintf("rpc-%d-x7", conn), <-ids)
	}
}

func TestEncodeResponseRoundTrips(t *testing.T) {
	for _, text := range []string{"", "plain", "tab\tnl\ncr\r\"q\" \\ \x00\x1f\x7f <>&", "日本語 \u2028", "bad utf8 \xff"} {
		for _, isErr := range []bool{false, true} {
			b, err := encodeResponse(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage(`7`), Result: agentbridge.Result{Text: text, IsError: isErr}})
			require.NoError(t, err)
			var got struct {
				JSONRPC string `json:"jsonrpc"`
				ID      int
				Result  agentbridge.Result
			}
			require.NoError(t, json.Unmarshal(b, &got), string(b))
			want := agentbridge.Result{Text: text, IsError: isErr}
			if text == "bad utf8 \xff" {
				want.Text = "bad utf8 \ufffd" // encoding/json's replacement
			}
			assert.Equal(t, want, got.Result)
			assert.Equal(t, 7, got.ID)
		}
	}
}

func TestDecodeResultFast(t *testing.T) {
	for _, text := range []string{"", "plain", "tab\tnl\ncr\r\"q\" \\ /", "日本語", "ctl \x01"} {
		for _, isErr := range []bool{false, true} {
			b, err := encodeResponse(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage(`12`), Result: agentbridge.Result{Text: text, IsError: isErr}})
			require.NoError(t, err)
			var r agentbridge.Result
			if decodeResultFast(b, &r) {
				assert.Equal(t, agentbridge.Result{Text: text, IsError: isErr}, r)
			} else {
				assert.Contains(t, text, "\x01", "only \\u escapes fall back")
			}
		}
	}
	var r agentbridge.Result
	assert.False(t, decodeResultFast([]byte(`{"id":1,"jsonrpc":"2.0","result":{"text":"x"}}`), &r), "another key order falls back")
	assert.False(t, decodeResultFast([]byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"x","extra":1}}`), &r))
}
