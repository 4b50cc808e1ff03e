package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// runTool runs the subcommand name with args in-process, through the
// whole command line as main does, under ctx.
func runTool(ctx context.Context, name string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = newApp(&out, &errOut).main(ctx, append([]string{name}, args...))
	return code, out.String(), errOut.String()
}

func TestToolsCommand(t *testing.T) {
	ctx := context.Background()
	code, out, errOut := runTool(ctx, "tools", "--mount", "type=memory,dst=/memory", "--dialect", "claude", "--json")
	require.Equal(t, 0, code, errOut)
	var defs []agentbridge.ToolDef
	require.NoError(t, json.Unmarshal([]byte(out), &defs))
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	assert.Equal(t, []string{"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "Bash", "TaskStop"}, names, "Claude Code 2.1.332's tools; LS and MultiEdit are served, not listed")

	code, out, _ = runTool(ctx, "tools", "--mount", "type=memory,dst=/memory", "--tools", "read,ls")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "read\n  Read a text file"), out)
	assert.NotContains(t, out, "write\n")

	code, _, errOut = runTool(ctx, "tools", "--mount", "type=memory,dst=/memory", "--dialect", "vim")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--dialect: unknown dialect "vim"`)
	code, _, errOut = runTool(ctx, "tools", "--mount", "type=memory,dst=/memory", "--tools", "fly")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `tools: unknown tool "fly"`)

	// The config file's tools: list narrows the same way; a tool no mount
	// can serve (write on a read-only skills-free workspace) fails closed.
	cfg := filepath.Join(t.TempDir(), "ws.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("mounts:\n  - {type: memory, dst: /memory}\ntools: [read, grep]\n"), 0o644))
	code, out, errOut = runTool(ctx, "tools", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "read\n"), out)
	assert.Contains(t, out, "grep\n")
	assert.NotContains(t, out, "ls\n")
	ro := t.TempDir()
	require.NoError(t, os.WriteFile(cfg, []byte("mounts:\n  - {type: host, src: "+ro+", dst: /host, ro: true}\ntools: [read, write]\n"), 0o644))
	code, _, errOut = runTool(ctx, "tools", "--config", cfg)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "write")
}

func TestCallCommand(t *testing.T) {
	ctx := context.Background()
	mem := []string{"--mount", "type=memory,dst=/memory"}
	code, out, errOut := runTool(ctx, "call", append(mem, "write", `{"path": "/memory/a.txt", "fileText": "hi"}`)...)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "created /memory/a.txt (2 bytes)\n", out)

	code, out, _ = runTool(ctx, "call", append(mem, "read", `{"path": "/memory/none"}`)...)
	assert.Equal(t, 1, code, "a tool error is exit 1")
	assert.Contains(t, out, "read /memory/none: no such file or directory")

	code, out, _ = runTool(ctx, "call", append(mem, "read", `{not json`)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "arguments must be a JSON object")

	code, out, _ = runTool(ctx, "call", append(mem, "--dry-run", "write", `{"path": "/memory/a.txt", "fileText": "hi"}`)...)
	assert.Equal(t, 0, code)
	assert.Equal(t, "would create /memory/a.txt (2 bytes) (dry run: nothing was changed)\n", out)

	code, _, _ = runTool(ctx, "call", append(mem, "read")...)
	assert.Equal(t, 2, code, "a missing argument is a usage error")
}

func TestCallShellPrivateMount(t *testing.T) {
	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	code, out, errOut := runTool(context.Background(), "call", "--mount", "type=memory,dst=/memory", "shell", `{"command": "echo hi > /memory/x && cat /memory/x && pwd"}`)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "exit code: 0\n--- stdout ---\nhi\n/memory\n", out)
	assertNoVfsmountMounts(t)
}

func TestExecCommand(t *testing.T) {
	fusetest.Need(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	code, out, errOut := runTool(context.Background(), "exec", "--mount", "type=memory,dst=/memory", "--", "sh", "-c", "echo hi > /memory/a; cat /memory/a; exit 7")
	assert.Equal(t, 7, code, errOut)
	assert.Equal(t, "hi\n", out)
	assertNoVfsmountMounts(t)
}

func TestServeCommand(t *testing.T) {
	fusetest.Need(t)
	sock := filepath.Join(t.TempDir(), "ws.sock")
	mp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	type res struct {
		code        int
		out, errOut string
	}
	done := make(chan res, 1)
	go func() {
		code, out, errOut := runTool(ctx, "serve", "--mount", "type=memory,dst=/memory", "--listen", "unix:"+sock, "--mountpoint", mp)
		done <- res{code, out, errOut}
	}()
	var conn net.Conn
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", sock)
		conn = c
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	c := jsonrpc.NewClient(conn)
	var r agentbridge.Result
	require.NoError(t, c.Call(ctx, "tools.call", jsonrpc.ToolsCallParams{Name: "write", Arguments: json.RawMessage(`{"path":"/memory/s.txt","fileText":"served"}`)}, &r))
	require.False(t, r.IsError, r.Text)
	// The kernel face is at --mountpoint: the same tree.
	data, err := os.ReadFile(filepath.Join(mp, "memory/s.txt"))
	require.NoError(t, err)
	assert.Equal(t, "served", string(data))

	code, out, errOut := runTool(ctx, "call", "--server", "unix:"+sock, "read", `{"path":"/memory/s.txt"}`)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "     1\tserved\n", out)
	c.Close()

	cancel() // what SIGTERM does through main's signal watcher
	select {
	case r := <-done:
		assert.Equal(t, 0, r.code, r.errOut)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.False(t, mounted(t, mp), "serve left its mount behind")
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "socket removed")
}

func assertNoVfsmountMounts(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(f[1], os.TempDir()+"/vfsmount-ws-") {
			t.Errorf("left behind: %s", line)
		}
	}
}

func TestServeRefusesBadListen(t *testing.T) {
	for _, listen := range []string{"", "udp:1.2.3.4:5", "tcp:0.0.0.0:9000", "tcp:example.com:80", "unix:"} {
		code, _, errOut := runTool(context.Background(), "serve", "--mount", "type=memory,dst=/memory", "--listen", listen)
		assert.Equal(t, 2, code, "%q: %s", listen, errOut)
		assert.Contains(t, errOut, "serve: --listen")
	}
}

// TestFSMonitorHook: the hook is vfsmount-fsmonitor where it is beside the
// binary and can run, else the binary's fsmonitor command.
func TestFSMonitorHook(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "vfsmount")
	assert.Nil(t, fsmonitorHook(""))
	assert.Equal(t, []string{self, "fsmonitor"}, fsmonitorHook(self))
	helper := filepath.Join(dir, "vfsmount-fsmonitor")
	require.NoError(t, os.WriteFile(helper, nil, 0o644))
	assert.Equal(t, []string{self, "fsmonitor"}, fsmonitorHook(self), "not executable")
	require.NoError(t, os.Chmod(helper, 0o755))
	assert.Equal(t, []string{helper}, fsmonitorHook(self))
}
