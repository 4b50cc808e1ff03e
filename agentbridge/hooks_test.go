package agentbridge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// treeHash hashes every name, type, mode and content of the tree.
func treeHash(t *testing.T, fsys mounts.FS) string {
	t.Helper()
	ctx := context.Background()
	h := sha256.New()
	var walk func(name string)
	walk = func(name string) {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		fmt.Fprintf(h, "%s %v %d\n", name, a.Mode, a.Size)
		switch {
		case a.IsDir():
			ents, err := fsys.ReadDir(ctx, name)
			require.NoError(t, err)
			for _, e := range ents {
				walk(mounts.Join(name, e.Name))
			}
		case a.Mode.IsRegular():
			data, err := mounts.ReadFile(ctx, fsys, name)
			require.NoError(t, err)
			h.Write(data)
		}
	}
	walk(".")
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestDryRun(t *testing.T) {
	files := map[string]string{
		"/memory/a.txt":       "alpha\nbeta\ngamma\n",
		"/memory/dir/one":     "1\n",
		"/memory/dir/sub/two": "2\n",
		"/memory/empty/.keep": "",
		"/repo/r.txt":         "r\n",
	}
	w := fixture(t, files, Options{DryRun: true})
	before := treeHash(t, w.fsys)
	tests := []struct {
		tool string
		args obj
		want []string
	}{
		{"write", obj{"path": "/memory/new/b.txt", "fileText": "hello"}, []string{"would create /memory/new/b.txt (5 bytes)", dryRunNote}},
		{"write", obj{"path": "/memory/a.txt", "fileText": "x"}, []string{"would overwrite /memory/a.txt (1 bytes, now 17 bytes)"}},
		{"edit", obj{"path": "/memory/a.txt", "oldText": "beta", "newText": "BETA"}, []string{
			"would edit /memory/a.txt (1 change)", "--- a/memory/a.txt\n+++ b/memory/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"}},
		{"edit", obj{"path": "/memory/c.txt", "oldText": "", "newText": "fresh\n"}, []string{"--- /dev/null\n+++ b/memory/c.txt\n@@ -0,0 +1 @@\n+fresh\n"}},
		{"edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /memory/a.txt\n@@\n alpha\n-beta\n+b\n*** Delete File: /memory/dir/one\n*** End Patch"},
			[]string{"would apply patch (2 files)", "-beta\n+b\n", "--- a/memory/dir/one\n+++ /dev/null\n@@ -1 +0,0 @@\n-1\n"}},
		{"delete", obj{"path": "/memory/a.txt"}, []string{"would delete /memory/a.txt (file, 17 bytes)"}},
		{"delete", obj{"path": "/memory/dir", "recursive": true}, []string{"would delete /memory/dir and 3 entries below it"}},
		{"read", obj{"path": "/memory/a.txt"}, []string{"     2\tbeta\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got := ok(t, w, tt.tool, tt.args)
			for _, s := range tt.want {
				assert.Contains(t, got, s)
			}
		})
	}
	// A refusal is still a refusal in a dry run.
	assert.Contains(t, fail(t, w, "delete", obj{"path": "/memory/dir"}), "directory not empty")
	assert.Contains(t, fail(t, w, "write", obj{"path": "/repo/r.txt", "fileText": "x"}), "read-only mount /repo")
	assert.Equal(t, before, treeHash(t, w.fsys), "a dry run changes nothing")
}

func TestLimits(t *testing.T) {
	w := fixture(t, map[string]string{"/memory/big.txt": numbered(1, 1000), "/memory/a.txt": "a\n"},
		Options{Limits: Limits{MaxFileBytes: 100, MaxReadBytes: 200, MaxShellTimeout: time.Second}})
	assert.Contains(t, fail(t, w, "write", obj{"path": "/memory/x", "fileText": strings.Repeat("x", 101)}), "101 bytes is over the limit of 100 bytes per file")
	ok(t, w, "write", obj{"path": "/memory/x", "fileText": strings.Repeat("x", 100)})
	assert.Contains(t, fail(t, w, "edit", obj{"path": "/memory/a.txt", "oldText": "a", "newText": strings.Repeat("y", 200)}), "over the limit")
	out := ok(t, w, "read", obj{"path": "/memory/big.txt"})
	assert.True(t, strings.HasSuffix(out, "    13\tline 13\n… output capped at 200 bytes; call read with offset=14\n"), out)

	// The output cap applies to every tool, on top of the others.
	w = fixture(t, map[string]string{"/memory/big.txt": numbered(1, 1000)}, Options{Limits: Limits{MaxOutputBytes: 150}})
	out = ok(t, w, "read", obj{"path": "/memory/big.txt"})
	assert.True(t, strings.HasSuffix(out, "\n… [output truncated: 150 of 15893 bytes shown]"), out)

	d := Limits{}.withDefaults()
	assert.Equal(t, Limits{MaxFileBytes: 16 << 20, MaxReadBytes: 1 << 20, MaxShellTimeout: 10 * time.Minute, MaxOutputBytes: 2 << 20}, d)
	assert.Equal(t, 10*time.Minute, Limits{MaxShellTimeout: time.Hour}.withDefaults().MaxShellTimeout, "the TOOLS.md maximum cannot be raised")
}

func TestCapOutput(t *testing.T) {
	assert.Equal(t, "short", capOutput("short", 10))
	got := capOutput("ééééé", 5) // 10 bytes; the cut lands inside a rune
	assert.True(t, strings.HasPrefix(got, "éé\n… [output truncated: 4 of 10 bytes shown]"), got)
}

func TestHooks(t *testing.T) {
	var mu sync.Mutex
	var after []string
	refuse := errors.New("not approved: no writes today")
	w := fixture(t, map[string]string{"/memory/a.txt": "a\n"}, Options{
		BeforeCall: func(ctx context.Context, c *CallInfo) error {
			caller, ok := mounts.CallerFrom(ctx)
			if !ok || caller.Face != "tool" || caller.CallID != c.ID {
				return fmt.Errorf("no tool caller in the context: %+v", caller)
			}
			if c.Verb == VerbWrite {
				return refuse
			}
			return nil
		},
		AfterCall: func(ctx context.Context, c *CallInfo, res Result, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			after = append(after, fmt.Sprintf("%s %s err=%v refused=%q paths=%v", c.Tool, c.Verb, res.IsError, c.Refused, c.Paths))
		},
	})
	msg := fail(t, w, "write", obj{"path": "/memory/a.txt", "fileText": "b"})
	assert.Equal(t, "write: not approved: no writes today; nothing was changed", msg)
	assert.Equal(t, "     1\ta\n", ok(t, w, "read", obj{"path": "/memory/a.txt"}), "the refused write changed nothing")
	r := call(t, w, "claude", "Edit", obj{"file_path": "/memory/a.txt", "old_string": "a", "new_string": "c"})
	require.False(t, r.IsError, r.Text)
	fail(t, w, "nope", obj{})
	assert.Equal(t, []string{
		`write write err=true refused="not approved: no writes today" paths=[/memory/a.txt]`,
		`read read err=false refused="" paths=[/memory/a.txt]`,
		`Edit edit err=false refused="" paths=[/memory/a.txt]`,
		`nope  err=true refused="" paths=[]`,
	}, after)
}

func TestCallSummary(t *testing.T) {
	c := &CallInfo{Args: map[string]json.RawMessage{
		"path":     json.RawMessage(`"/memory/a"`),
		"fileText": json.RawMessage(`"secret text"`),
		"edits":    json.RawMessage(`[{"old_string":"secret","new_string":"other","replace_all":true}]`),
		"command":  json.RawMessage(`"ls -l"`),
	}}
	assert.JSONEq(t, `{"path":"/memory/a","fileText":{"bytes":11},"edits":[{"old_string":{"bytes":6},"new_string":{"bytes":5},"replace_all":true}],"command":"ls -l"}`,
		string(c.Summary()))
	assert.NotContains(t, string(c.Summary()), "secret")
}

// TestCallIDs: a call's id is the one its transport gave it (WithCallID),
// else a random one. The JSON-RPC transport's ids are tested in package
// jsonrpc.
func TestCallIDs(t *testing.T) {
	ids := make(chan string, 4)
	w := fixture(t, nil, Options{AfterCall: func(_ context.Context, c *CallInfo, _ Result, _ time.Duration) { ids <- c.ID }})
	ok(t, w, "ls", obj{"depth": 1, "path": "/"})
	assert.Regexp(t, `^call-[0-9a-f]{12}$`, <-ids)
	r := w.Call(WithCallID(context.Background(), "rpc-2-x7"), "", "ls", json.RawMessage(`{"path":"/"}`))
	require.False(t, r.IsError, r.Text)
	assert.Equal(t, "rpc-2-x7", <-ids)
}
