package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// The link to the remote machine cut mid-write, silently (a Toxiproxy on
// the path drops every byte both ways and closes nothing), then restored:
//   - what an fsync acknowledged before the cut is on the remote disk;
//   - the writer caught by the cut gets EIO within the mount's bound,
//     never a hang and never a silent loss;
//   - the other mounts serve on while the link is down;
//   - once the link is back the mount serves again without a remount, and
//     what the remote holds of the cut file is a prefix of what was
//     written: never a byte that was not.
func TestE2ERemoteLinkCutMidWrite(t *testing.T) {
	fusetest.Need(t)
	sshd := testutil.StartSSHD(t)
	tp := testutil.StartToxiproxy(t)
	link := tp.Proxy(t, "ssh", fmt.Sprintf("127.0.0.1:%d", sshd.Port))
	// The host key as known at the proxy's port.
	known := filepath.Join(t.TempDir(), "known_hosts")
	_, key, ok := strings.Cut(sshd.HostKeyLine, " ")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(known, fmt.Appendf(nil, "[127.0.0.1]:%d %s\n", link.Port, key), 0o600))

	dir := remoteDir(t)
	mp := t.TempDir()
	spec := fmt.Sprintf("type=remote,src=ssh://root@127.0.0.1:%d%s,dst=/workspace,identity=%s,known_hosts=%s,timeout=1s",
		link.Port, dir, sshd.UserKey, known)
	c := startMount(t, mp, "--mount", "type=memory,dst=/memory", "--mount", spec)
	ws := filepath.Join(mp, "workspace")

	synced := bytes.Repeat([]byte("fsync'd before the cut\n"), 1000)
	f, err := os.Create(filepath.Join(ws, "synced.txt"))
	require.NoError(t, err, c.stderr.String())
	_, err = f.Write(synced)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	// The writer: 4 MiB, then the cut, then on until the mount says the
	// link is gone (or 64 MiB more, then fsync and close).
	chunk := make([]byte, 1<<20)
	pattern := func(i int) []byte {
		for j := range chunk {
			chunk[j] = byte(i*7 + j%251)
		}
		return chunk
	}
	cutDone := make(chan struct{})
	wrote := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		w, err := os.Create(filepath.Join(ws, "big.bin"))
		if err != nil {
			close(wrote)
			result <- err
			return
		}
		defer w.Close()
		i := 0
		for ; i < 4; i++ {
			if _, err := w.Write(pattern(i)); err != nil {
				close(wrote)
				result <- err
				return
			}
		}
		close(wrote)
		<-cutDone
		for ; i < 68; i++ {
			if _, err := w.Write(pattern(i)); err != nil {
				result <- err
				return
			}
		}
		if err := w.Sync(); err != nil {
			result <- err
			return
		}
		result <- w.Close()
	}()
	<-wrote
	link.Cut(t)
	cut := time.Now()
	close(cutDone)
	select {
	case err := <-result:
		require.Error(t, err, "a write the remote never confirmed is reported to the writer")
		assert.ErrorIs(t, err, syscall.EIO)
		t.Logf("the writer's error %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatal("the writer was still blocked 20 s after the cut (the mount's timeout is 1 s)")
	}
	require.NoError(t, os.WriteFile(filepath.Join(mp, "memory", "m.txt"), []byte("ok"), 0o644), "the other mounts serve on")
	err = within(t, 10*time.Second, "a stat on the cut link", func() error {
		_, err := os.Stat(filepath.Join(ws, "never-looked-up"))
		return err
	})
	assert.ErrorIs(t, err, syscall.EIO, "a dead link is an error, not a stale answer")

	link.Restore(t)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(ws, fmt.Sprintf("new-%d", time.Now().UnixNano())))
		return errors.Is(err, fs.ErrNotExist)
	}, 30*time.Second, 50*time.Millisecond, "the mount serves again once the link is back")

	got, err := os.ReadFile(filepath.Join(dir, "synced.txt"))
	require.NoError(t, err)
	assert.Equal(t, synced, got, "what fsync acknowledged is on the remote disk")
	big, err := os.ReadFile(filepath.Join(dir, "big.bin"))
	require.NoError(t, err)
	for off := 0; off < len(big); off += len(chunk) {
		want := pattern(off / len(chunk))[:min(len(chunk), len(big)-off)]
		require.True(t, bytes.Equal(want, big[off:off+len(want)]), "the remote's copy at %d is not what was written", off)
	}
	t.Logf("the remote holds %d MiB of the cut file", len(big)>>20)

	require.NoError(t, os.WriteFile(filepath.Join(ws, "after.txt"), []byte("back"), 0o644))
	onRemote(t, filepath.Join(dir, "after.txt"), "back")
	assert.Contains(t, c.stderr.String(), "link lost")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, c.exitCode(t, 10*time.Second), c.stderr.String())
}
