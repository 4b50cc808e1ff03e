package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// vfsmountMounts lists the mount points of the vfsmount FUSE mounts in a
// mountinfo file (/proc/PID/mountinfo: that process's namespace).
func vfsmountMounts(t *testing.T, mountinfo string) []string {
	t.Helper()
	data, err := os.ReadFile(mountinfo)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if w == "-" && i+1 < len(f) && i > 4 && strings.HasPrefix(f[i+1], "fuse") && strings.Contains(f[i+1], "vfsmount") {
				out = append(out, f[4])
			}
		}
	}
	return out
}

// needShell skips without bubblewrap, as the other shell tests do.
func needShell(t *testing.T) {
	t.Helper()
	fusetest.Need(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("a private mount namespace needs root")
	}
}

// readAnswer reads lines from r until the answer to id (its JSON) and
// returns it.
func readAnswer(t *testing.T, r *bufio.Reader, id string, stderr *syncBuffer) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "before the answer to %s; stderr:\n%s", id, stderr)
		var m struct{ ID json.RawMessage }
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == id {
			return line
		}
	}
}

// startMCP runs `vfsmount mcp` and returns once a shell call through its
// workspace has answered.
func startMCP(t *testing.T, bin string) *exec.Cmd {
	cmd := exec.Command(bin, "mcp", "--mount", "type=memory,dst=/memory")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close() })
	fmt.Fprint(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi > /memory/a && cat /memory/a"}}}
`)
	assert.Contains(t, readAnswer(t, bufio.NewReader(out), "2", stderr), `hi\n`)
	go io.Copy(io.Discard, out)
	return cmd
}

// ownMounts are the vfsmount mounts of process pid's namespace that it
// made itself: those at its private mountpoint (the rest are copies of the
// host's, other tests' mounts among them).
func ownMounts(t *testing.T, pid int) []string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("vfsmount-ns-%d", os.Geteuid()))
	var own []string
	for _, mp := range vfsmountMounts(t, fmt.Sprintf("/proc/%d/mountinfo", pid)) {
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			own = append(own, mp)
		}
	}
	return own
}

// TestE2EKilledServerLeavesNoMount: serve, mcp, call and exec mount their
// workspace in a namespace of their own: the host's mount table never has
// it, not while they run and not after SIGKILL.
func TestE2EKilledServerLeavesNoMount(t *testing.T) {
	needShell(t)
	for _, tc := range []struct {
		name string
		// start runs the command and returns once its workspace is
		// mounted and its shell has run.
		start func(t *testing.T, bin string) *exec.Cmd
	}{
		{"mcp", startMCP},
		{"serve", func(t *testing.T, bin string) *exec.Cmd {
			sock := filepath.Join(t.TempDir(), "ws.sock")
			cmd := exec.Command(bin, "serve", "--mount", "type=memory,dst=/memory", "--listen", "unix:"+sock)
			require.NoError(t, cmd.Start())
			var conn net.Conn
			require.Eventually(t, func() bool {
				c, err := net.Dial("unix", sock)
				conn = c
				return err == nil
			}, 15*time.Second, 10*time.Millisecond, "serve listening")
			c := jsonrpc.NewClient(conn)
			t.Cleanup(func() { c.Close() })
			var r agentbridge.Result
			require.NoError(t, c.Call(t.Context(), "tools.call", jsonrpc.ToolsCallParams{Name: "shell", Arguments: json.RawMessage(`{"command":"echo hi > /memory/a && cat /memory/a"}`)}, &r))
			assert.Contains(t, r.Text, "hi\n")
			return cmd
		}},
		{"call", func(t *testing.T, bin string) *exec.Cmd {
			host := t.TempDir()
			// The shell says it runs through a host directory, and
			// waits to be killed with the server.
			cmd := exec.Command(bin, "call", "--mount", "type=host,src="+host+",dst=/host", "shell", `{"command":"touch /host/started && exec sleep 600"}`)
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(host, "started"))
				return err == nil
			}, 15*time.Second, 10*time.Millisecond, "the shell call running")
			return cmd
		}},
		{"exec", func(t *testing.T, bin string) *exec.Cmd {
			host := t.TempDir()
			cmd := exec.Command(bin, "exec", "--mount", "type=host,src="+host+",dst=/host", "--", "sh", "-c", "touch /host/started && exec sleep 600")
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(host, "started"))
				return err == nil
			}, 15*time.Second, 10*time.Millisecond, "the command running")
			return cmd
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.start(t, binary(t))
			pid := cmd.Process.Pid
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			own := ownMounts(t, pid)
			require.NotEmpty(t, own, "the server's namespace has its workspace")
			nsServer, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
			require.NoError(t, err)
			nsHost, err := os.Readlink("/proc/self/ns/mnt")
			require.NoError(t, err)
			assert.NotEqual(t, nsHost, nsServer, "the server runs in a mount namespace of its own")
			host := vfsmountMounts(t, "/proc/self/mountinfo")
			for _, mp := range own {
				assert.NotContains(t, host, mp, "the host sees the server's mount while it runs")
			}

			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())

			host = vfsmountMounts(t, "/proc/self/mountinfo")
			for _, mp := range own {
				assert.NotContains(t, host, mp, "left behind in the host's namespace")
				st, err := fusefs.Probe(mp)
				assert.NoError(t, err)
				assert.Equal(t, fusefs.StateNone, st, "%s after SIGKILL", mp)
			}
		})
	}
}

// TestE2EClearsStaleOldWorkspace: a stale $TMPDIR/vfsmount-ws-* mount, as
// older versions (or a server that could not leave the host's namespace)
// left one, is cleared by the next serve, mcp or call.
func TestE2EClearsStaleOldWorkspace(t *testing.T) {
	needShell(t)
	dir, err := os.MkdirTemp("", "vfsmount-ws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(dir) })
	c := startMount(t, dir, "--mount", "type=memory,dst=/memory")
	require.NoError(t, c.cmd.Process.Kill())
	<-c.done
	st, err := fusefs.Probe(dir)
	require.NoError(t, err)
	require.Equal(t, fusefs.StateStale, st)

	code, out, errOut := runBinary(t, "call", "--mount", "type=memory,dst=/memory", "shell", `{"command":"echo ok"}`)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ok\n")
	assert.Contains(t, errOut, "cleared a stale workspace mount")
	assert.Contains(t, errOut, dir)
	assert.False(t, mounted(t, dir), "the stale mount is gone")
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "and its directory: %v", err)
}

// TestE2EHostUnmountNotPinned: a mount the host had when a namespaced
// server started, copied into its namespace, does not outlive the host's
// unmount of it there: its own server stops as if the other did not exist.
// (Where the host's root is private, as here, nothing propagates the
// unmount; the server mirrors it.)
func TestE2EHostUnmountNotPinned(t *testing.T) {
	needShell(t)
	dir := t.TempDir()
	c := startMount(t, dir, "--mount", "type=memory,dst=/memory")
	server := startMCP(t, binary(t))
	t.Cleanup(func() {
		_ = server.Process.Kill()
		_ = server.Wait()
	})
	inServer := func() bool {
		return slices.Contains(vfsmountMounts(t, fmt.Sprintf("/proc/%d/mountinfo", server.Process.Pid)), dir)
	}
	require.True(t, inServer(), "the server's namespace starts with a copy of the host's mount")

	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 20*time.Second), "the host's mount server stops: %s", c.stderr)
	assert.False(t, mounted(t, dir))
	require.Eventually(t, func() bool { return !inServer() }, 10*time.Second, 10*time.Millisecond, "the copy is detached")
}

// TestE2EServeClearsStaleMountpoint: a --mountpoint mount is the host's,
// and a stale one there, left by a killed server, is cleared by the next.
func TestE2EServeClearsStaleMountpoint(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	c := startMount(t, dir, "--mount", "type=memory,dst=/memory")
	require.NoError(t, c.cmd.Process.Kill())
	<-c.done
	st, err := fusefs.Probe(dir)
	require.NoError(t, err)
	require.Equal(t, fusefs.StateStale, st)

	cmd := exec.Command(binary(t), "serve", "--mount", "type=memory,dst=/memory", "--listen", "stdio", "--mountpoint", dir)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools.call","params":{"name":"write","arguments":{"path":"/memory/a","fileText":"x"}}}` + "\n")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("serve: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	assert.Contains(t, string(out), `"id":1,"result"`)
	assert.False(t, mounted(t, dir), "serve unmounted at the end")
}
