package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// remoteDir is a directory standing for the remote machine's.
func remoteDir(t *testing.T) string {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"a.txt": "hello remote\n", "sub/b.go": "package sub\n"})
	return dir
}

func rawConfig(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "ws.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func dirNames(t *testing.T, dir string) string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var ns []string
	for _, e := range ents {
		ns = append(ns, e.Name())
	}
	sort.Strings(ns)
	return strings.Join(ns, "\n")
}

// A command whose directory is in the remote mount runs on the peer's
// side (the environment the channel gave the peer), sees the mount at
// /workspace, and its cd carries; a command elsewhere runs here and sees
// the same entries through the kernel face; the ls tool lists them too.
func TestE2ERemoteShellRunsThere(t *testing.T) {
	fusetest.Need(t)
	dir := remoteDir(t)
	cfg := rawConfig(t, fmt.Sprintf(`mounts:
  - {type: memory, dst: /memory}
  - {type: remote, dst: /workspace, command: [env, PEER_SIDE=remote, %s, peer, %s]}
`, binary(t), dir))
	want := dirNames(t, dir)

	code, out, stderr := runBinary(t, "call", "--config", cfg, "shell",
		`{"command":"echo side=$PEER_SIDE; ls /workspace; cd sub && pwd","cwd":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "side=remote\n")
	assert.Contains(t, out, want+"\n")
	assert.Contains(t, out, "/workspace/sub\n")

	code, out, stderr = runBinary(t, "call", "--config", cfg, "shell",
		`{"command":"echo side=$PEER_SIDE; ls /workspace","cwd":"/memory"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "side=\n", "a command outside the remote mount runs here")
	assert.Contains(t, out, want+"\n", "and sees the remote files through the kernel face")

	code, out, stderr = runBinary(t, "call", "--config", cfg, "ls", `{"path":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	for _, n := range strings.Split(want, "\n") {
		assert.Contains(t, out, n)
	}

	code, out, stderr = runBinary(t, "call", "--config", cfg, "grep", `{"pattern":"hello","path":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "/workspace/a.txt:1:hello remote")

	// A write through the tool is on the remote side at once.
	code, _, stderr = runBinary(t, "call", "--config", cfg, "write", `{"path":"/workspace/new.txt","fileText":"x\n"}`)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(filepath.Join(dir, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
}

// Over a real OpenSSH server: the host key checked, the peer installed in
// the remote user's cache by its hash (and reused), the shell run there.
func TestE2ERemoteSSH(t *testing.T) {
	fusetest.Need(t)
	sshd := testutil.StartSSHD(t, "PEER_SIDE=ssh-remote")
	dir := remoteDir(t)
	spec := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)
	for i := range 2 {
		code, out, stderr := runBinary(t, "call", "--mount", "type=memory,dst=/memory", "--mount", spec, "shell",
			`{"command":"echo side=$PEER_SIDE; cat a.txt","cwd":"/workspace"}`)
		require.Equal(t, 0, code, "run %d: %s", i, stderr)
		assert.Contains(t, out, "side=ssh-remote\nhello remote\n")
	}
	bin, err := os.ReadFile(binary(t))
	require.NoError(t, err)
	sum := sha256.Sum256(bin)
	installed := filepath.Join(sshd.Cache, "vfsmount", "peer", hex.EncodeToString(sum[:]), "vfsmount")
	got, err := os.ReadFile(installed)
	require.NoError(t, err, "the peer is installed in the remote user's cache by its hash")
	assert.Equal(t, sum, sha256.Sum256(got))
	ents, err := os.ReadDir(filepath.Dir(installed))
	require.NoError(t, err)
	assert.Len(t, ents, 1, "no upload left behind")
}

// Bad input: one line naming the mount and the cause, the right exit code,
// nothing mounted.
func TestE2ERemoteBadInput(t *testing.T) {
	fusetest.Need(t)
	sshd := testutil.StartSSHD(t)
	dir := remoteDir(t)
	src := fmt.Sprintf("ssh://root@127.0.0.1:%d%s", sshd.Port, dir)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	other := filepath.Join(t.TempDir(), "other")
	testutil.Keygen(t, other)
	otherPub, err := os.ReadFile(other + ".pub")
	require.NoError(t, err)
	f := strings.Fields(string(otherPub))
	changed := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(changed, fmt.Appendf(nil, "[127.0.0.1]:%d %s %s\n", sshd.Port, f[0], f[1]), 0o600))
	accept := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(accept, nil, 0o600))

	id := ",identity=" + sshd.UserKey
	for _, c := range []struct {
		name, spec, config string
		code               int
		says               []string
	}{
		{"unknown host key", "type=remote,dst=/w,src=" + src + id + ",known_hosts=" + empty, "", 2, []string{"127.0.0.1", "SHA256:", "not in"}},
		{"changed host key", "type=remote,dst=/w,src=" + src + id + ",known_hosts=" + changed, "", 2, []string{"CHANGED", "SHA256:"}},
		{"missing remote dir", "type=remote,dst=/w,src=" + src + "/nope" + id + ",known_hosts=" + sshd.KnownHosts, "", 1, []string{"/w", "nope"}},
		{"refused key", "type=remote,dst=/w,src=" + src + ",identity=" + other + ",known_hosts=" + sshd.KnownHosts, "", 1, []string{"/w", "unable to authenticate"}},
		{"unreachable", fmt.Sprintf("type=remote,dst=/w,src=ssh://127.0.0.1:%d/x", testutil.FreePort(t)) + id, "", 1, []string{"/w", "refused"}},
		{"not ssh", "type=remote,dst=/w,src=https://example.invalid/x", "", 2, []string{"ssh://"}},
		{"command exits at once", "", "mounts:\n  - {type: remote, dst: /w, command: [false]}\n", 1, []string{"/w", "false"}},
		{"another protocol", "", "mounts:\n  - {type: remote, dst: /w, command: [sh, -c, 'echo vfsmount-remote 99 other; sleep 5']}\n", 2, []string{"/w", "protocol", "99"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"call"}
			if c.config != "" {
				args = append(args, "--config", rawConfig(t, c.config))
			} else {
				args = append(args, "--mount", c.spec)
			}
			code, _, stderr := runBinary(t, append(args, "ls", `{"path":"/"}`)...)
			assert.Equal(t, c.code, code, stderr)
			line := strings.TrimSpace(stderr)
			for _, s := range c.says {
				assert.Contains(t, line, s)
			}
		})
	}
	// accept_new_host_key records the key and connects.
	code, _, stderr := runBinary(t, "call", "--mount", "type=remote,dst=/w,src="+src+id+",accept_new_host_key,known_hosts="+accept, "ls", `{"path":"/w"}`)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(accept)
	require.NoError(t, err)
	assert.Contains(t, string(b), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", sshd.Port))
}

// peerPids are the pids of the peers serving dir.
func peerPids(t *testing.T, dir string) []int {
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 3 && args[len(args)-2] == "peer" && args[len(args)-1] == dir {
			pids = append(pids, pid)
		}
	}
	return pids
}

// within runs f and fails the test if it does not return in d: an
// operation on a mount whose link is down must never hang.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

// The peer killed -9 and unable to come back: operations on /workspace
// fail within the timeout with EIO, the other mounts serve on; once the
// peer can run again the mount serves again, without a remount.
func TestE2ERemotePeerKilled(t *testing.T) {
	dir := remoteDir(t)
	flag := filepath.Join(t.TempDir(), "down")
	cfg := rawConfig(t, fmt.Sprintf(`mounts:
  - {type: memory, dst: /memory}
  - {type: remote, dst: /workspace, timeout: 1s, command: [sh, -c, 'test -e %s && exit 1; exec %s peer %s']}
`, flag, binary(t), dir))
	mp := t.TempDir()
	c := startMount(t, mp, "--config", cfg)
	ws := filepath.Join(mp, "workspace")
	b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello remote\n", string(b))
	pids := peerPids(t, dir)
	require.Len(t, pids, 1)

	require.NoError(t, os.WriteFile(flag, nil, 0o600))
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	// Through the kernel: an error within the bound (a stat cached from
	// before the kill may still answer for its second; a new name not).
	require.Eventually(t, func() bool {
		err := within(t, 5*time.Second, "stat on a dead link", func() error {
			_, err := os.Stat(filepath.Join(ws, fmt.Sprintf("new-%d", time.Now().UnixNano())))
			return err
		})
		return errors.Is(err, syscall.EIO)
	}, 10*time.Second, 50*time.Millisecond, "EIO while the link is down")
	err = within(t, 5*time.Second, "a write on a dead link", func() error {
		return os.WriteFile(filepath.Join(ws, "w.txt"), []byte("x"), 0o644)
	})
	assert.ErrorIs(t, err, syscall.EIO)
	require.NoError(t, os.WriteFile(filepath.Join(mp, "memory", "m.txt"), []byte("ok"), 0o644), "the other mounts serve on")

	require.NoError(t, os.Remove(flag))
	require.Eventually(t, func() bool {
		// A name never looked up: only the peer can answer (ENOENT).
		_, err := os.Stat(filepath.Join(ws, fmt.Sprintf("new-%d", time.Now().UnixNano())))
		return errors.Is(err, fs.ErrNotExist)
	}, 15*time.Second, 50*time.Millisecond, "the mount serves again")
	require.Len(t, peerPids(t, dir), 1, "a new peer")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "after.txt"), []byte("back"), 0o644))
	onRemote(t, filepath.Join(dir, "after.txt"), "back")
	assert.Contains(t, c.stderr.String(), "link lost")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 10*time.Second), c.stderr.String())
}

// The ssh server restarted under a live mount: the mount dials again and
// serves, with the data written before on the remote disk.
func TestE2ERemoteSSHDRestarted(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := remoteDir(t)
	mp := t.TempDir()
	spec := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s,timeout=1s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)
	c := startMount(t, mp, "--mount", spec)
	ws := filepath.Join(mp, "workspace")
	f, err := os.Create(filepath.Join(ws, "synced.txt"))
	require.NoError(t, err, c.stderr.String())
	_, err = f.WriteString("durable")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	b, err := os.ReadFile(filepath.Join(dir, "synced.txt"))
	require.NoError(t, err)
	require.Equal(t, "durable", string(b), "fsync answered: on the remote disk")

	sshd.Restart(t)
	require.Eventually(t, func() bool {
		err := within(t, 5*time.Second, "a write after the restart", func() error {
			return os.WriteFile(filepath.Join(ws, "after.txt"), []byte("back"), 0o644)
		})
		return err == nil
	}, 20*time.Second, 100*time.Millisecond, "the mount serves again after the server's restart")
	onRemote(t, filepath.Join(dir, "after.txt"), "back")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 10*time.Second), c.stderr.String())
}

// onRemote waits for a write made through the kernel without fsync to
// reach the remote disk: writes are pipelined, and close(2) does not wait
// for them (what follows through the mount, a remote command included,
// does; fsync does).
func onRemote(t *testing.T, path, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && string(b) == want
	}, 5*time.Second, 10*time.Millisecond, "%s never reached the remote disk", path)
}

// A change made on the remote machine by another program reaches the
// kernel face through the peer's change stream: the kernel caches a
// remote mount as long as content only this daemon changes (30 s), so
// without the stream the old content and listing would stay.
func TestE2ERemoteChangesFromElsewhere(t *testing.T) {
	dir := remoteDir(t)
	cfg := rawConfig(t, fmt.Sprintf("mounts:\n  - {type: remote, dst: /workspace, command: [%s, peer, %s]}\n", binary(t), dir))
	mp := t.TempDir()
	c := startMount(t, mp, "--config", cfg)
	ws := filepath.Join(mp, "workspace")
	b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello remote\n", string(b))
	_, err = os.Stat(filepath.Join(ws, "later.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed there\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "later.txt"), []byte("new\n"), 0o644))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
		return err == nil && string(b) == "changed there\n"
	}, 5*time.Second, 10*time.Millisecond, "the content changed elsewhere is read")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(ws, "later.txt"))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "a name created elsewhere is seen (no stale negative entry)")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 10*time.Second), c.stderr.String())
}

// A peer asked to serve the whole machine refuses unless told to.
func TestE2EPeerRefusesRoot(t *testing.T) {
	code, _, stderr := runBinary(t, "peer", "/")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "refusing to serve /")
	assert.Contains(t, stderr, "--allow-root")
}
