package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// noexecCache mounts a tmpfs with noexec over the remote user's cache,
// where the peer would be installed: the upload succeeds, the peer cannot
// run.
func noexecCache(t *testing.T, sshd *testutil.SSHD) {
	t.Helper()
	require.NoError(t, os.MkdirAll(sshd.Cache, 0o700))
	require.NoError(t, syscall.Mount("tmpfs", sshd.Cache, "tmpfs", syscall.MS_NOEXEC|syscall.MS_NOSUID, "mode=700"))
	t.Cleanup(func() { _ = syscall.Unmount(sshd.Cache, syscall.MNT_DETACH) })
}

// Where the peer cannot run (a noexec cache, or install=never and no
// vfsmount there), the mount is served over SFTP with the shell over
// ssh exec: the files and a shell command there still work, the log says
// mode=sftp and why, and the brief says so.
func TestE2ERemoteSFTPFallback(t *testing.T) {
	fusetest.Need(t)
	// No vfsmount on the remote PATH, whatever this machine has.
	sshd := testutil.StartSSHD(t, "PEER_SIDE=ssh-remote", "PATH=/usr/bin:/bin")
	noexecCache(t, sshd)
	dir := remoteDir(t)
	src := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)

	// install=auto: the peer is uploaded into the noexec cache, and
	// cannot run from there.
	code, out, stderr := runBinary(t, "call", "--mount", "type=memory,dst=/memory", "--mount", src, "shell",
		`{"command":"echo side=$PEER_SIDE; cat a.txt; pwd; cd sub && ls","cwd":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "side=ssh-remote\nhello remote\n"+dir+"\nb.go\n", "the command ran on the remote side, in the directory")
	assert.Contains(t, stderr, "mode=sftp")
	assert.Contains(t, stderr, "cannot install the peer")
	assert.NotContains(t, stderr, "mode=peer")

	// install=never, and no vfsmount on the remote PATH.
	never := src + ",install=never"
	code, _, stderr = runBinary(t, "call", "--mount", never, "write", `{"path":"/workspace/new.txt","fileText":"over sftp\n"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "mode=sftp")
	assert.Contains(t, stderr, "no vfsmount")
	b, err := os.ReadFile(filepath.Join(dir, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "over sftp\n", string(b), "the write is on the remote disk")
	code, out, stderr = runBinary(t, "call", "--mount", never, "ls", `{"path":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	for _, n := range []string{"a.txt", "new.txt", "sub"} {
		assert.Contains(t, out, n)
	}
	code, out, stderr = runBinary(t, "call", "--mount", never, "grep", `{"pattern":"hello|sftp","path":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "/workspace/a.txt:1:hello remote")
	assert.Contains(t, out, "/workspace/new.txt:1:over sftp")
	assert.NotContains(t, out, "b.go")

	// mode=peer does not fall back: the mount fails, naming it.
	code, _, stderr = runBinary(t, "call", "--mount", never+",mode=peer", "ls", `{"path":"/workspace"}`)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "/workspace")
	assert.Contains(t, stderr, "no vfsmount")

	// The brief says how the mount is served.
	mp := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--mount", never, "--listen", "stdio", "--mountpoint", mp)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"workspace.brief"}` + "\n")
	var bout, berr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bout, &berr
	require.NoError(t, cmd.Run(), berr.String())
	assert.Contains(t, bout.String(), "ssh://127.0.0.1 over SFTP", "the mount table says the mode")
	assert.Contains(t, bout.String(), "/workspace is served over SFTP, not by a vfsmount peer (no peer: ", "the shell's part says why and what it means")
}

// Through the kernel, the SFTP mount reads and writes the remote files,
// and a name created on the remote side is seen (no change stream: the
// kernel's caches are short).
func TestE2ERemoteSFTPKernel(t *testing.T) {
	sshd := testutil.StartSSHD(t)
	dir := remoteDir(t)
	spec := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s,mode=sftp,timeout=2s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)
	mp := t.TempDir()
	c := startMount(t, mp, "--mount", spec)
	ws := filepath.Join(mp, "workspace")
	b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err, c.stderr.String())
	assert.Equal(t, "hello remote\n", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "k.txt"), []byte("via the kernel"), 0o640))
	got, err := os.ReadFile(filepath.Join(dir, "sub", "k.txt"))
	require.NoError(t, err)
	assert.Equal(t, "via the kernel", string(got))
	st, err := os.Stat(filepath.Join(dir, "sub", "k.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	require.NoError(t, os.Rename(filepath.Join(ws, "sub", "k.txt"), filepath.Join(ws, "k2.txt")))
	_, err = os.Stat(filepath.Join(dir, "k2.txt"))
	require.NoError(t, err, "renamed on the remote disk")

	_, err = os.Stat(filepath.Join(ws, "later.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "later.txt"), []byte("new\n"), 0o644))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(ws, "later.txt"))
		return err == nil && string(b) == "new\n"
	}, 5*time.Second, 50*time.Millisecond, "a file made on the remote side is seen")
	assert.Contains(t, c.stderr.String(), "mode=sftp")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 10*time.Second), c.stderr.String())
}

// A remote of another architecture (its uname says so): the peer is not
// installed, the mount is served over SFTP, and the log says why.
func TestE2ERemoteSFTPOtherArch(t *testing.T) {
	fusetest.Need(t)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho Linux riscv64\n"), 0o755))
	sshd := testutil.StartSSHD(t, "PATH="+bin+":/usr/bin:/bin")
	dir := remoteDir(t)
	src := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s",
		sshd.Port, dir, sshd.UserKey, sshd.KnownHosts)
	code, out, stderr := runBinary(t, "call", "--mount", src, "shell", `{"command":"cat sub/b.go; uname -m","cwd":"/workspace"}`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "package sub\nLinux riscv64\n", "the command ran there, with its PATH")
	assert.Contains(t, stderr, "mode=sftp")
	assert.Contains(t, stderr, `Linux riscv64`)
	_, err := os.Stat(filepath.Join(sshd.Cache, "vfsmount"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was installed")
}

// A bad mode, or mode=sftp for a command: channel, is a configuration
// error (exit 2) naming the key.
func TestE2ERemoteModeBadInput(t *testing.T) {
	code, _, stderr := runBinary(t, "call", "--mount", "type=remote,dst=/w,src=ssh://127.0.0.1/x,mode=fast", "ls", `{"path":"/"}`)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "mode: want auto, peer or sftp")
	cfg := rawConfig(t, "mounts:\n  - {type: remote, dst: /w, mode: sftp, command: [true]}\n")
	code, _, stderr = runBinary(t, "call", "--config", cfg, "ls", `{"path":"/"}`)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "mode=sftp applies to ssh")
}
