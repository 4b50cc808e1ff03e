package main

import (
	"bytes"
	"errors"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
)

// The end-to-end tests run the real binary as a child process, as a user
// would, and look at the mount from this process through os calls. The
// test process never serves the mount, so it may use it freely.

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// e2eVersion is stamped into the test binary the way the Makefile stamps
// releases.
const e2eVersion = "v0.0.0-e2e"

// binary builds the vfsmount binary once per test run.
func binary(t *testing.T) string {
	t.Helper()
	return testutil.Binary(t, "-ldflags", "-X main.version="+e2eVersion)
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer = testutil.Buffer

// child is a running `vfsmount mount`.
type child struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error // valid after done is closed
}

// exitCode waits (up to timeout) for the child and returns its exit code.
func (c *child) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
	default:
		select {
		case <-c.done:
		case <-time.After(timeout):
			t.Fatalf("vfsmount did not exit within %v; stderr:\n%s", timeout, c.stderr)
		}
	}
	if c.err == nil {
		return 0
	}
	var ee *exec.ExitError
	require.ErrorAs(t, c.err, &ee, "stderr:\n%s", c.stderr)
	return ee.ExitCode()
}

// startMount runs `vfsmount mount ARGS... dir` and waits until the mount is
// live and the child says it is serving. The cleanup kills the child and
// clears its mount if the test did not.
//
// Live alone is not enough: the kernel answers as soon as mount(2) is
// done, while go-fuse still holds a file of the mount open (its poll
// probe, in WaitMount). A child killed then flushes that file on its way
// out, to a connection only it serves, and hangs in D state for good.
func startMount(t *testing.T, dir string, args ...string) *child {
	t.Helper()
	fusetest.Need(t)
	c := &child{stderr: &syncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(binary(t), append(append([]string{"mount"}, args...), dir)...)
	c.cmd.Stderr = c.stderr
	require.NoError(t, c.cmd.Start())
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if st, _ := fusefs.Probe(dir); st != fusefs.StateNone {
			_ = fusefs.ForceUnmount(dir)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _ := fusefs.Probe(dir)
		if log := c.stderr.String(); st == fusefs.StateLive &&
			(strings.Contains(log, "msg=serving") || strings.Contains(log, `"msg":"serving"`)) {
			return c
		}
		select {
		case <-c.done:
			// Exit 2 is our bug (bad arguments), not the machine's.
			require.NotEqual(t, exitUsage, c.exitCode(t, 0), "usage error: %s", c.stderr)
			fusetest.MountFailed(t, errors.New("vfsmount exited before the mount was live: "+c.stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			fusetest.MountFailed(t, errors.New("mount not live after 15s: "+c.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runBinary runs the binary to completion and returns its exit code and
// output.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		return ee.ExitCode(), out.String(), errOut.String()
	}
	return 0, out.String(), errOut.String()
}

func TestE2EVersion(t *testing.T) {
	code, stdout, stderr := runBinary(t, "version")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "vfsmount "+e2eVersion, lines[0], "set by -ldflags -X")
	assert.Equal(t, "go       "+runtime.Version(), lines[1])
	assert.Regexp(t, `^go-fuse  v2\.\d+\.\d+`, lines[2], "from the build info")
}

func TestE2ESignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			c := startMount(t, dir, "--mount", "type=memory,dst=/memory")

			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			assert.Equal(t, "memory", entries[0].Name())
			name := filepath.Join(dir, "memory", "x")
			require.NoError(t, os.WriteFile(name, []byte("hi\n"), 0o644))
			got, err := os.ReadFile(name)
			require.NoError(t, err)
			assert.Equal(t, "hi\n", string(got))

			require.NoError(t, c.cmd.Process.Signal(sig))
			assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "stderr:\n%s", c.stderr)
			st, err := fusefs.Probe(dir)
			require.NoError(t, err)
			assert.Equal(t, fusefs.StateNone, st, "mount gone")
			assert.False(t, mounted(t, dir), "not in /proc/mounts")
			log := c.stderr.String()
			assert.Contains(t, log, "msg=mount prefix=/memory type=memory source=memory access=rw")
			assert.Contains(t, log, "msg=unmounted")
		})
	}
}

func TestE2EDebugTracesFUSE(t *testing.T) {
	dir := t.TempDir()
	c := startMount(t, dir, "--debug")
	_, err := os.Stat(filepath.Join(dir, "memory"))
	require.NoError(t, err)
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, c.exitCode(t, 15*time.Second))
	assert.Regexp(t, `level=DEBUG msg="rx \d+: LOOKUP n1 +\\"memory\\"`, c.stderr.String(), "FUSE requests traced")
}

func TestE2EUmountAndStatus(t *testing.T) {
	dir := t.TempDir()
	c := startMount(t, dir, "--log-format", "json")

	code, stdout, _ := runBinary(t, "status", dir)
	assert.Equal(t, 0, code, "status of a live mount")
	assert.Equal(t, dir+": live\n", stdout)

	code, stdout, stderr := runBinary(t, "mount", dir)
	assert.Equal(t, 1, code, "mount over a live mount")
	assert.Empty(t, stdout)
	assert.Equal(t, "vfsmount: mountpoint "+dir+": a live FUSE mount is already there (stop it, or run: vfsmount umount "+dir+")\n", stderr)

	code, _, stderr = runBinary(t, "umount", dir)
	assert.Equal(t, 0, code, "umount: %s", stderr)
	assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "the server exits 0 when unmounted from outside")
	assert.Contains(t, c.stderr.String(), `"msg":"unmounted from outside"`, "json logs")

	code, stdout, _ = runBinary(t, "status", dir)
	assert.Equal(t, 2, code, "status of nothing")
	assert.Equal(t, dir+": not mounted\n", stdout)

	code, _, stderr = runBinary(t, "umount", dir)
	assert.Equal(t, 1, code, "umount of nothing")
	assert.Equal(t, "vfsmount: "+dir+": not mounted\n", stderr)
}

func TestE2EStale(t *testing.T) {
	dir := t.TempDir()
	c := startMount(t, dir)
	require.NoError(t, c.cmd.Process.Kill())
	<-c.done

	// At once: the kernel's attribute cache must not make a dead mount
	// look live.
	code, stdout, _ := runBinary(t, "status", dir)
	assert.Equal(t, 1, code, "status of a stale mount")
	assert.Equal(t, dir+": stale\n", stdout)

	// A new mount clears the stale one.
	c2 := startMount(t, dir)
	assert.Contains(t, c2.stderr.String(), "cleared a stale FUSE mount")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "memory", "y"), []byte("y"), 0o644))
	require.NoError(t, c2.cmd.Process.Kill())
	<-c2.done

	// umount clears a stale mount too.
	code, _, stderr := runBinary(t, "umount", dir)
	assert.Equal(t, 0, code, "umount of a stale mount: %s", stderr)
	code, _, _ = runBinary(t, "status", dir)
	assert.Equal(t, 2, code)
	assert.False(t, mounted(t, dir))
}

func TestE2EBusyUnmountDetachesLazily(t *testing.T) {
	tests := []struct {
		name      string
		secondSig bool
		why       string
	}{
		{name: "after the grace period", why: "grace period over"},
		{name: "on a second signal", secondSig: true, why: "second signal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := startMount(t, dir)
			// A child whose working directory is inside the mount keeps
			// it busy.
			busy := exec.Command("sleep", "60")
			busy.Dir = filepath.Join(dir, "memory")
			require.NoError(t, busy.Start())
			t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })

			code, _, stderr := runBinary(t, "umount", dir)
			assert.Equal(t, 1, code, "umount of a busy mount")
			assert.Equal(t, "vfsmount: unmount "+dir+": busy (a program uses it; stop it, or use --lazy)\n", stderr)

			start := time.Now()
			require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
			if tc.secondSig {
				require.Eventually(t, func() bool {
					return strings.Contains(c.stderr.String(), "mountpoint busy, retrying")
				}, 10*time.Second, 20*time.Millisecond)
				require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
			}
			assert.Equal(t, 0, c.exitCode(t, unmountGrace+15*time.Second), "stderr:\n%s", c.stderr)
			if tc.secondSig {
				assert.Less(t, time.Since(start), unmountGrace, "did not wait out the grace period")
			} else {
				assert.GreaterOrEqual(t, time.Since(start), unmountGrace-time.Second, "retried for the grace period")
			}
			log := c.stderr.String()
			assert.Contains(t, log, "mountpoint busy, retrying")
			assert.Contains(t, log, "detached lazily")
			assert.Contains(t, log, `why="`+tc.why+`"`)
			assert.False(t, mounted(t, dir), "detached from the namespace")
		})
	}
}

func TestE2EBadInputNothingMounted(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "ws.yaml")
	writeFile(t, cfg, "mounts:\n  - {type: memory, dst: /m, colour: blue}\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown type", []string{"mount", "--mount", "type=nope,dst=/x", dir}, `unknown mount type "nope"`},
		{"config unknown key", []string{"mount", "--config", cfg, dir}, cfg + `:2: unknown key "colour"`},
		{"unknown flag", []string{"mount", "--nope", dir}, "unknown flag: --nope"},
		{"not a directory", []string{"mount", cfg}, "not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.Contains(t, stderr, tc.want)
			assert.False(t, mounted(t, dir))
		})
	}
}

// mountOptions returns the options column of dir's line in /proc/mounts.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == dir {
			return f[3]
		}
	}
	t.Fatalf("%s is not in /proc/mounts", dir)
	return ""
}

// TestE2EReadOnlyTwice: a workspace nothing in can change is also mounted
// read-only, so the kernel refuses writes before they reach us; one
// writable mount makes the kernel mount read-write.
func TestE2EReadOnlyTwice(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644))

	dir := t.TempDir()
	c := startMount(t, dir, "--mount", "type=host,src="+src+",dst=/data,ro")
	assert.Contains(t, strings.Split(mountOptions(t, dir), ","), "ro")
	err := os.WriteFile(filepath.Join(dir, "data", "g"), nil, 0o644)
	assert.ErrorIs(t, err, syscall.EROFS)
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "stderr:\n%s", c.stderr)

	dir = t.TempDir()
	c = startMount(t, dir, "--mount", "type=host,src="+src+",dst=/data,ro", "--mount", "type=memory,dst=/memory")
	assert.Contains(t, strings.Split(mountOptions(t, dir), ","), "rw")
	assert.ErrorIs(t, os.WriteFile(filepath.Join(dir, "data", "g"), nil, 0o644), syscall.EROFS)
	assert.NoError(t, os.WriteFile(filepath.Join(dir, "memory", "g"), nil, 0o644))
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 15*time.Second), "stderr:\n%s", c.stderr)
}
