package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// The container-sidecar deployment (deploy/kubernetes/sidecar.yaml) rests
// on mount propagation: the sidecar mounts the workspace inside a volume
// its container holds with Bidirectional propagation (rshared), the mount
// propagates to the node's copy of the volume, and from there into the
// agent container, which holds the volume with HostToContainer (rslave).
// No container engine runs here, so TestSidecarPropagation builds the same
// arrangement from mount namespaces, as a container runtime would:
//
//	node     unshare --mount --propagation private; the volume is a
//	         directory bind-mounted onto itself and made shared (what the
//	         kubelet's pod directories are)
//	sidecar  a namespace copied from the node's with --propagation shared
//	         (Bidirectional), running vfsmount mount VOLUME/ws
//	agent    a namespace copied from the node's with --propagation slave
//	         (HostToContainer), created before the sidecar mounts
//	control  the same, with --propagation private: it must see nothing
//
// The readiness probe and preStop hook run inside the sidecar's namespace
// with nsenter, as the kubelet runs exec probes in the container. The test
// process's own namespace never gets a mount: everything lives and dies
// with the node namespace.

// sidecarNode is a node namespace held open by a sleeping process.
type sidecarNode struct {
	pid  int
	cmd  *exec.Cmd
	done chan struct{}
}

// mountNS returns the mount namespace of pid, as readlink shows it.
func mountNS(pid string) string {
	ns, _ := os.Readlink("/proc/" + pid + "/ns/mnt")
	return ns
}

// waitNewNS waits until pid lives in a mount namespace other than from.
func waitNewNS(t *testing.T, pid int, from string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns := mountNS(strconv.Itoa(pid))
		if ns != "" && ns != from {
			return
		}
		require.True(t, time.Now().Before(deadline), "process %d did not enter a new mount namespace", pid)
		time.Sleep(5 * time.Millisecond)
	}
}

// startProcess starts cmd and kills it (and waits for it) in the cleanup
// unless it has exited by then.
func startProcess(t *testing.T, cmd *exec.Cmd) (done chan struct{}, waitErr *error) {
	t.Helper()
	require.NoError(t, cmd.Start())
	done = make(chan struct{})
	waitErr = new(error)
	go func() {
		*waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return done, waitErr
}

func newSidecarNode(t *testing.T) *sidecarNode {
	t.Helper()
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "3600")
	done, _ := startProcess(t, cmd)
	waitNewNS(t, cmd.Process.Pid, mountNS("self"))
	return &sidecarNode{pid: cmd.Process.Pid, cmd: cmd, done: done}
}

// in returns a command that runs args in the mount namespace of pid.
func in(pid int, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--mount=/proc/" + strconv.Itoa(pid) + "/ns/mnt", "--"}, args...)...)
}

// runIn runs args in the namespace of pid and returns the exit code and
// combined output.
func runIn(t *testing.T, pid int, args ...string) (int, string) {
	t.Helper()
	out, err := in(pid, args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, "%v: %s", args, out)
	return 0, string(out)
}

// agentShell is a shell in its own namespace that runs one script per line
// it is sent, printing a line "END" after each.
type agentShell struct {
	stdin io.WriteCloser
	lines chan string
}

func startAgent(t *testing.T, node *sidecarNode, propagation string) *agentShell {
	t.Helper()
	cmd := in(node.pid, "unshare", "--mount", "--propagation", propagation, "sh", "-c",
		`while IFS= read -r line; do sh -c "$line" 2>&1; echo END; done`)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	startProcess(t, cmd)
	t.Cleanup(func() { stdin.Close() })
	waitNewNS(t, cmd.Process.Pid, mountNS(strconv.Itoa(node.pid)))
	a := &agentShell{stdin: stdin, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	return a
}

// run runs script in the agent's namespace and returns its output lines.
func (a *agentShell) run(t *testing.T, script string) []string {
	t.Helper()
	_, err := fmt.Fprintln(a.stdin, script)
	require.NoError(t, err)
	var out []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-a.lines:
			require.True(t, ok, "the agent shell exited")
			if line == "END" {
				return out
			}
			out = append(out, line)
		case <-timeout:
			t.Fatalf("agent script %q did not finish in 30s", script)
		}
	}
}

func TestSidecarPropagation(t *testing.T) {
	fusetest.Need(t)
	for _, tool := range []string{"unshare", "nsenter", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			if fusetest.Required() {
				t.Fatalf("%s (util-linux) is required: %v", tool, err)
			}
			t.Skipf("%s (util-linux) not installed", tool)
		}
	}
	bin := vfsmountBinary(t)

	dir := t.TempDir()
	volume := filepath.Join(dir, "volume")
	ws := filepath.Join(volume, "ws")
	src := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hello from the host\n"), 0o644))

	node := newSidecarNode(t)
	for _, args := range [][]string{
		{"mount", "--bind", volume, volume},
		{"mount", "--make-shared", volume},
	} {
		code, out := runIn(t, node.pid, args...)
		require.Equal(t, 0, code, "%v: %s", args, out)
	}

	// Both agents exist before the workspace is mounted, as the agent
	// container may start first.
	agent := startAgent(t, node, "slave")
	control := startAgent(t, node, "private")

	stderr := &lockedBuffer{}
	sidecar := in(node.pid, "unshare", "--mount", "--propagation", "shared",
		bin, "--log-format", "json", "mount",
		"--mount", "type=host,src="+src+",dst=/src,ro",
		"--mount", "type=memory,dst=/memory",
		ws)
	sidecar.Stderr = stderr
	sidecarDone, sidecarErr := startProcess(t, sidecar)
	waitNewNS(t, sidecar.Process.Pid, mountNS(strconv.Itoa(node.pid)))

	// The readiness probe: vfsmount status in the sidecar's namespace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := runIn(t, sidecar.Process.Pid, bin, "status", ws)
		if code == 0 {
			break
		}
		select {
		case <-sidecarDone:
			fusetest.MountFailed(t, fmt.Errorf("vfsmount exited before the mount was live (%v): %s", *sidecarErr, stderr))
		default:
		}
		if time.Now().After(deadline) {
			fusetest.MountFailed(t, fmt.Errorf("mount not live after 30s: %s", stderr))
		}
		time.Sleep(50 * time.Millisecond)
	}

	st, err := fusefs.Probe(ws)
	require.NoError(t, err)
	assert.Equal(t, fusefs.StateNone, st, "nothing propagates to the test's own namespace")

	// The agent reads what the sidecar serves, and writes to it.
	assert.Equal(t, []string{"hello from the host"}, agent.run(t, "cat "+ws+"/src/hello.txt"))
	assert.Equal(t, []string{"memory", "src"}, agent.run(t, "ls "+ws))
	assert.Equal(t, []string{"from the agent"},
		agent.run(t, "echo 'from the agent' > "+ws+"/memory/note.txt && cat "+ws+"/memory/note.txt"))
	refused := strings.Join(agent.run(t, "echo x > "+ws+"/src/new.txt || echo refused"), "\n")
	assert.Contains(t, refused, "Read-only file system", "the ro host mount refuses the agent's write")
	assert.True(t, strings.HasSuffix(refused, "refused"), "%s", refused)
	// The write went to the one workspace the sidecar serves.
	code, out := runIn(t, sidecar.Process.Pid, "cat", ws+"/memory/note.txt")
	assert.Equal(t, 0, code)
	assert.Equal(t, "from the agent\n", out)

	// Without propagation, nothing arrives: the propagation is what
	// made the mount visible above.
	assert.Equal(t, []string{"not visible"},
		control.run(t, "test -e "+ws+"/src/hello.txt && echo visible || echo not visible"))

	// The preStop hook unmounts; the sidecar then exits 0 by itself, and
	// the unmount propagates to the node and the agent.
	code, out = runIn(t, sidecar.Process.Pid, bin, "umount", "--lazy", ws)
	require.Equal(t, 0, code, "preStop: %s", out)
	select {
	case <-sidecarDone:
		assert.NoError(t, *sidecarErr, "vfsmount mount exits 0 once unmounted; stderr: %s", stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("vfsmount mount did not exit after the preStop unmount: %s", stderr)
	}
	assert.Contains(t, stderr.String(), `"msg":"unmounted from outside"`)
	assert.Equal(t, []string{"gone"},
		agent.run(t, "test -e "+ws+"/src && echo still there || echo gone"))
	code, out = runIn(t, node.pid, bin, "status", ws)
	assert.Equal(t, 2, code, "not mounted on the node: %s", out)
	assert.Empty(t, mountsBelow(t, dir), "no mount in the test's namespace")
}

// mountsBelow lists the mount points of this process's namespace below dir.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir) {
			out = append(out, f[1])
		}
	}
	return out
}
