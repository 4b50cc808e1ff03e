package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// TestGitPartialClone: a git mount of a blobless clone reads a file by
// fetching its blob from the promisor remote (served here on loopback);
// offline, by the mount's key or the global flag, the read is a tool
// error naming the object, and the rest is served.
func TestGitPartialClone(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	testutil.GitInit(t, src)
	testutil.GitCommit(t, src, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n"}, "one")
	testutil.AllowPartialClones(t, src)
	d := testutil.ServeGit(t, base)
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.PartialClone(t, d.URL+"src", "blob:none", clone)
	cache := t.TempDir()
	mount := "type=git,src=" + clone + ",dst=/repo"
	cloned := d.Conns.Load()

	code, out, errOut := runCLI("call", "--cache-dir", cache, "--mount", mount, "read", `{"path": "/repo/a.txt"}`)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "alpha")
	assert.Contains(t, errOut, "fetched from the promisor remote")
	assert.Equal(t, cloned+1, d.Conns.Load(), "one fetch")

	oid := testutil.Git(t, clone, "rev-parse", "HEAD:b.txt")
	for _, args := range [][]string{
		{"--mount", mount + ",offline"},
		{"--offline", "--mount", mount},
	} {
		args = append(append([]string{"call", "--cache-dir", cache}, args...), "read", `{"path": "/repo/b.txt"}`)
		code, out, errOut = runCLI(args...)
		assert.Equal(t, 1, code, "a tool error: %s%s", out, errOut)
		assert.Contains(t, out, oid, "names the object")
		assert.Contains(t, out, "offline")
		code, out, _ = runCLI(append(args[:len(args)-1], `{"path": "/repo/a.txt"}`)...)
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "alpha", "what the clone holds is served offline")
	}
	assert.Equal(t, cloned+1, d.Conns.Load(), "offline fetched nothing")

	// Writable: the overlay and its .git are made without a fetch.
	ws, err := buildSpecs(t, mount+",writable")
	require.NoError(t, err)
	defer ws.Close()
	assert.Equal(t, cloned+1, d.Conns.Load(), "a writable mount fetches nothing to start")
	got, err := mounts.ReadFile(context.Background(), ws.FS, "repo/c.txt")
	require.NoError(t, err)
	assert.Equal(t, "gamma\n", string(got))
	assert.Equal(t, cloned+2, d.Conns.Load())
}

// TestE2EGitPartialClone: through the kernel, a file of a blobless clone
// reads as its content, fetched on first read; offline, the read fails
// with EIO and the daemon's log names the object; a listing needs no
// fetch.
func TestE2EGitPartialClone(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	testutil.GitInit(t, src)
	testutil.GitCommit(t, src, map[string]string{"d/a.txt": "alpha\n", "d/b.txt": "beta\n"}, "one")
	testutil.AllowPartialClones(t, src)
	d := testutil.ServeGit(t, base)
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.PartialClone(t, d.URL+"src", "blob:none", clone)
	cloned := d.Conns.Load()

	for _, offline := range []bool{true, false} {
		dir := t.TempDir()
		spec := "type=git,src=" + clone + ",dst=/repo"
		if offline {
			spec += ",offline"
		}
		c := startMount(t, dir, "--cache-dir", t.TempDir(), "--mount", spec)
		names, err := os.ReadDir(filepath.Join(dir, "repo", "d"))
		require.NoError(t, err)
		assert.Len(t, names, 2)
		data, err := os.ReadFile(filepath.Join(dir, "repo", "d", "a.txt"))
		if offline {
			require.ErrorIs(t, err, syscall.EIO)
			assert.Equal(t, cloned, d.Conns.Load(), "offline fetched nothing")
			oid := testutil.Git(t, clone, "rev-parse", "HEAD:d/a.txt")
			assert.Contains(t, c.stderr.String(), oid, "the log names the object")
		} else {
			require.NoError(t, err)
			assert.Equal(t, "alpha\n", string(data))
			assert.Greater(t, d.Conns.Load(), cloned)
		}
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 0, c.exitCode(t, 20*time.Second), "%s", c.stderr)
	}
}
