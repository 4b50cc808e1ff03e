// Package examples_test runs the examples of this directory as their users
// would: the MCP client configurations are started as the harness starts
// them and spoken to over MCP, and the Python client is run against a real
// `vfsmount serve`. The Go library example (./library) tests itself.
package examples_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// vfsmountBinary builds cmd/vfsmount once per run, outside any FUSE mount.
func vfsmountBinary(t *testing.T) string {
	t.Helper()
	return testutil.Binary(t)
}

// mountsUnder lists the mount points in /proc/mounts below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			out = append(out, f[1])
		}
	}
	return out
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = testutil.Buffer

// mcpConfig is the part of a harness's MCP configuration file both Claude
// Code (.mcp.json) and Cursor (.cursor/mcp.json) share.
type mcpConfig struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"mcpServers"`
}

// gitProject makes a project with one commit holding the example config,
// a README and a file the config's policy keeps unreadable.
func gitProject(t *testing.T) string {
	t.Helper()
	cfg, err := os.ReadFile("vfsmount.yaml")
	require.NoError(t, err)
	dir, _ := testutil.GitRepo(t, map[string]string{
		"vfsmount.yaml": string(cfg),
		"README.md":     "# demo\nhello from the repo\n",
		"secret.env":    "TOKEN=hunter2\n",
	})
	return dir
}

// TestMCPConfigs starts each harness configuration's server as its harness
// does (Claude Code: in the project directory; Cursor: in /, expanding
// ${workspaceFolder}) and uses its tools over MCP.
func TestMCPConfigs(t *testing.T) {
	tests := []struct {
		file    string
		cwd     func(project string) string
		dialect string
		read    string
		args    func(path string) map[string]any
	}{
		{"claude-code/.mcp.json", func(p string) string { return p }, "claude", "Read",
			func(path string) map[string]any { return map[string]any{"file_path": path} }},
		{"cursor/mcp.json", func(string) string { return "/" }, "cursor", "read",
			func(path string) map[string]any { return map[string]any{"path": path} }},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			require.NoError(t, err)
			var cfg mcpConfig
			require.NoError(t, json.Unmarshal(data, &cfg), "%s is JSON", tc.file)
			require.Contains(t, cfg.MCPServers, "vfsmount", "Claude Code reserves the name workspace")
			require.Len(t, cfg.MCPServers, 1)
			srv := cfg.MCPServers["vfsmount"]
			assert.Equal(t, "vfsmount", srv.Command)
			require.GreaterOrEqual(t, len(srv.Args), 3)
			assert.Equal(t, []string{"mcp", "--config"}, srv.Args[:2])
			assert.Contains(t, srv.Args, tc.dialect)

			fusetest.Need(t)
			project := gitProject(t)
			args := make([]string, len(srv.Args))
			for i, a := range srv.Args {
				args[i] = strings.ReplaceAll(a, "${workspaceFolder}", project)
			}
			tmp := t.TempDir()
			cmd := exec.Command(vfsmountBinary(t), args...)
			cmd.Dir = tc.cwd(project)
			// The private kernel mount goes under tmp, where the test can
			// check it is gone afterwards.
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr

			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "examples-test", Version: "v0"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil && strings.Contains(stderr.String(), "mount") {
				fusetest.MountFailed(t, fmt.Errorf("%v: %s", err, stderr.String()))
			}
			require.NoError(t, err, "stderr: %s", stderr.String())
			closed := false
			t.Cleanup(func() {
				if !closed {
					cs.Close()
				}
			})

			instructions := cs.InitializeResult().Instructions
			assert.Contains(t, instructions, "/repo")
			assert.Contains(t, instructions, "/memory")
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			assert.Contains(t, names, tc.read)

			text := func(res *mcp.CallToolResult) string {
				require.NotEmpty(t, res.Content)
				return res.Content[0].(*mcp.TextContent).Text
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.read, Arguments: tc.args("/repo/README.md")})
			require.NoError(t, err)
			assert.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "hello from the repo")

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.read, Arguments: tc.args("/repo/secret.env")})
			require.NoError(t, err)
			assert.True(t, res.IsError, "the config's deny_read applies: %s", text(res))

			closed = true
			assert.NoError(t, cs.Close(), "the server exits 0 on EOF; stderr: %s", stderr.String())
			assert.Empty(t, mountsUnder(t, tmp), "the private kernel mount is gone")
		})
	}
}

// TestPythonClient runs examples/python/client.py, the client of
// docs/protocol.md, against `vfsmount serve` on a unix socket.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	fusetest.Need(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "ws.sock")
	serve := exec.Command(vfsmountBinary(t), "--log-format", "json", "serve",
		"--mount", "type=memory,dst=/memory", "--listen", "unix:"+sock)
	serve.Env = append(os.Environ(), "TMPDIR="+dir)
	stderr, err := serve.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, serve.Start())
	var waitErr error
	exited := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			serve.Process.Kill()
			<-exited
		}
	})

	// The JSON log says when the server listens, and where its kernel
	// face is mounted.
	servingRec := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "serving JSON-RPC" {
				servingRec <- rec
			}
		}
		waitErr = serve.Wait()
		close(exited)
	}()
	var serving map[string]any
	select {
	case serving = <-servingRec:
	case <-exited:
		fusetest.MountFailed(t, fmt.Errorf("vfsmount serve exited before serving: %v", waitErr))
	case <-time.After(30 * time.Second):
		t.Fatal("vfsmount serve did not start within 30s")
	}
	mountpoint, _ := serving["mountpoint"].(string)
	require.True(t, strings.HasPrefix(mountpoint, dir+"/"), "mountpoint %q", mountpoint)
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err, "the socket accepts")
	conn.Close()

	out, err := exec.Command(python, "python/client.py", sock).CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	assert.Contains(t, lines[0], "one filesystem namespace", "the brief comes first")
	assert.Contains(t, string(out), "  /memory  memory")
	assert.Contains(t, string(out), "\ntools: Read Write Edit NotebookEdit Glob Grep Bash TaskStop")
	assert.Equal(t, []string{
		"ok: created /memory/hello.txt (18 bytes)",
		"ok:      1\thello from python",
		"error: read /memory/missing.txt: no such file or directory",
	}, lines[len(lines)-3:])

	require.NoError(t, serve.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		assert.NoError(t, waitErr, "SIGTERM stops serve with exit 0")
	case <-time.After(30 * time.Second):
		t.Fatal("vfsmount serve did not stop within 30s of SIGTERM")
	}
	assert.Empty(t, mountsUnder(t, dir), "serve unmounted its kernel face")
	_, err = os.Stat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "serve removed its socket")
}

// TestProtocolDocClient: the client printed in docs/protocol.md is the one
// TestPythonClient runs.
func TestProtocolDocClient(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	require.NoError(t, err)
	client, err := os.ReadFile("python/client.py")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(doc), "```python\n")
	require.True(t, ok, "docs/protocol.md has a python block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok, "the python block ends")
	assert.Equal(t, string(client), block)
}
