package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// slowWorkspace is a workspace whose ls of /slow holds until release is
// closed or its context is done; started gets a value once it holds.
func slowWorkspace(t *testing.T) (w *agentbridge.Workspace, started, release chan struct{}) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mounts.MkdirAll(ctx, mem, "slow", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, mem, "slow/a", []byte("x"), 0o644))
	u, err := union.New(map[string]mounts.FS{"/": mem})
	require.NoError(t, err)
	started, release = make(chan struct{}, 8), make(chan struct{})
	w, err = agentbridge.New(u, agentbridge.Options{BeforeCall: func(ctx context.Context, c *agentbridge.CallInfo) error {
		if !strings.Contains(string(c.Args["path"]), "/slow") {
			return nil
		}
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	require.NoError(t, err)
	return w, started, release
}

const pipedRequests = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"ls","arguments":{"path":"/slow"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ls","arguments":{"path":"/"}}}
`

// serveDraining runs an MCP server of w on a DrainingTransport over pipes
// and returns the client's ends: in (close it for EOF), the answers by id
// once the server is done, and the server's error.
func serveDraining(t *testing.T, w *agentbridge.Workspace, grace time.Duration) (in io.WriteCloser, answers <-chan map[string]string, served <-chan error) {
	srv, err := New(w, "", nil)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), DrainingTransport(inR, outW, grace, nil))
		outW.Close()
	}()
	got := make(chan map[string]string, 1)
	go func() {
		ids := map[string]string{}
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Result json.RawMessage
				Error  json.RawMessage
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && len(m.ID) > 0 {
				a := string(m.Result) + string(m.Error)
				ids[string(m.ID)] = a[:min(len(a), 200)]
			}
		}
		got <- ids
	}()
	return inW, got, done
}

// TestDrainingTransportAnswersAtEOF: requests piped in and stdin closed
// at once are all answered, initialize and a call still running at the
// end of input included.
func TestDrainingTransportAnswersAtEOF(t *testing.T) {
	w, started, release := slowWorkspace(t)
	in, answers, served := serveDraining(t, w, DrainGrace)
	_, err := io.WriteString(in, pipedRequests)
	require.NoError(t, err)
	<-started
	require.NoError(t, in.Close())
	close(release)
	<-served
	ids := <-answers
	assert.Len(t, ids, 4, "%v", ids)
	for _, id := range []string{`1`, `2`, `"slow"`, `4`} {
		assert.Contains(t, ids, id)
	}
	assert.Contains(t, ids[`"slow"`], `a`)
	assert.NotContains(t, ids[`"slow"`], `"isError":true`)
}

// TestDrainingTransportGracePeriod: a call still running when the grace
// period is over does not keep the server: it ends, the call cancelled.
func TestDrainingTransportGracePeriod(t *testing.T) {
	w, started, _ := slowWorkspace(t)
	in, answers, served := serveDraining(t, w, 10*time.Millisecond)
	_, err := io.WriteString(in, pipedRequests)
	require.NoError(t, err)
	<-started
	require.NoError(t, in.Close())
	<-served
	ids := <-answers
	assert.Contains(t, ids, `1`)
	assert.Contains(t, ids, `4`)
}

// TestEachMessage: requests, answers and notifications as the counting
// tells them apart, batches and id spellings included.
func TestEachMessage(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, []string{"float64:7 ping"}},
		{"float id", `{"jsonrpc":"2.0","id":7.0,"method":"ping"}`, []string{"float64:7 ping"}},
		{"string id", `{"jsonrpc":"2.0","id":"7","method":"ping"}`, []string{"string:7 ping"}},
		{"answer", `{"jsonrpc":"2.0","id":7,"result":{}}`, []string{"float64:7 "}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`, nil},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]`, []string{"float64:1 a", "float64:2 b"}},
		{"not json", `{nope`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			eachMessage([]byte(tc.line), func(id, method string) { got = append(got, id+" "+method) })
			assert.Equal(t, tc.want, got)
		})
	}
}

var _ mcp.Transport = DrainingTransport(nil, nil, 0, nil)
