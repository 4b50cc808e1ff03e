package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// TestE2EPipedRequestsAnswered: a batch of requests piped into `mcp` and
// `serve --listen stdio` at once, stdin closed behind them, gets an answer
// to every id before the server exits, the slow shell call among them.
func TestE2EPipedRequestsAnswered(t *testing.T) {
	fusetest.Need(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	const slow = `sleep 1; echo slept`
	for _, tc := range []struct {
		name string
		args []string
		in   string
		ids  []string
		// shellID is the id of the slow shell call.
		shellID string
	}{
		{"mcp", []string{"mcp"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell","arguments":{"command":"` + slow + `"}}}
{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"ls","arguments":{"path":"/"}}}
`, []string{`1`, `2`, `3`, `"four"`}, `3`},
		{"serve stdio", []string{"serve", "--listen", "stdio"}, `{"jsonrpc":"2.0","id":1,"method":"tools.call","params":{"name":"shell","arguments":{"command":"` + slow + `"}}}
{"jsonrpc":"2.0","id":2,"method":"tools.list"}
{"jsonrpc":"2.0","id":"three","method":"tools.call","params":{"name":"ls","arguments":{"path":"/"}}}
`, []string{`1`, `2`, `"three"`}, `1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := exec.Command(binary(t), append(tc.args, "--mount", "type=memory,dst=/memory")...)
			cmd.Stdin = strings.NewReader(tc.in)
			cmd.Stdout, cmd.Stderr = &out, &errOut
			require.NoError(t, cmd.Run(), "stderr:\n%s", &errOut)
			got := map[string]string{}
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 4<<20)
			for sc.Scan() {
				var m struct{ ID, Result, Error json.RawMessage }
				require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
				got[string(m.ID)] = string(m.Result) + string(m.Error)
			}
			for _, id := range tc.ids {
				assert.Contains(t, got, id, "no answer to id %s; stderr:\n%s", id, &errOut)
			}
			assert.Len(t, got, len(tc.ids))
			assert.Contains(t, got[tc.shellID], `slept`, "the shell call ran to its end; stderr:\n%s", &errOut)
			assertNoVfsmountMounts(t)
		})
	}
}
