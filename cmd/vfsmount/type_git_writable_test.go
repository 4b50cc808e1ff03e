package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/workspace"
)

// buildSpecs validates and builds a workspace of the registry's real types.
func buildSpecs(t *testing.T, specs ...string) (*workspace.Workspace, error) {
	t.Helper()
	var raws []rawSpec
	for _, s := range specs {
		raw, err := parseSpec(s, "/")
		require.NoError(t, err)
		raws = append(raws, raw)
	}
	ms, err := validateSpecs(mountTypes(), raws)
	if err != nil {
		return nil, err
	}
	return buildWorkspace(context.Background(), &workspaceConfig{Mounts: ms}, nil)
}

func TestGitWritable(t *testing.T) {
	ctx := context.Background()
	dir, sha := testutil.GitRepo(t, map[string]string{"src/a.txt": "hello\n"})
	dir2, sha2 := testutil.GitRepo(t, map[string]string{"b.txt": "other\n"})

	t.Run("memory upper", func(t *testing.T) {
		ws, err := buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable")
		require.NoError(t, err)
		defer ws.Close()
		require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/src/a.txt", []byte("changed\n"), 0o644))
		got, err := mounts.ReadFile(ctx, ws.FS, "repo/src/a.txt")
		require.NoError(t, err)
		assert.Equal(t, "changed\n", string(got))
		before, err := os.ReadFile(filepath.Join(dir, "src/a.txt"))
		require.NoError(t, err)
		assert.Equal(t, "hello\n", string(before), "the source's working tree is never written")
		m := ws.Mounts()
		require.Len(t, m, 1)
		assert.True(t, m[0].Writable)
		assert.Equal(t, "git", m[0].Type)
		assert.Equal(t, "copy-on-write over git@"+sha[:12], m[0].Source)
		assert.False(t, m[0].Immutable, "the kernel face must not cache a writable mount as immutable")
		assert.Empty(t, fusefs.ImmutableRoots(ws.FS), "nor serve it on an immutable connection")
		assert.Equal(t, []string{"repo"}, fusefs.CopyOnWriteRoots(ws.FS), "but on a copy-on-write one")
		assert.False(t, ws.KernelReadOnly())
	})

	t.Run("persist keeps the upper over this commit only", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "upper.db")
		ws, err := buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,persist="+db)
		require.NoError(t, err)
		require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/new.txt", []byte("kept\n"), 0o644))
		require.NoError(t, ws.Close())

		ws, err = buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,persist="+db)
		require.NoError(t, err)
		got, err := mounts.ReadFile(ctx, ws.FS, "repo/new.txt")
		require.NoError(t, err)
		assert.Equal(t, "kept\n", string(got))
		require.NoError(t, ws.Close())

		sum := fileSum(t, db)
		_, err = buildSpecs(t, "type=git,src="+dir2+",dst=/repo,writable,persist="+db)
		require.Error(t, err)
		assert.Equal(t, exitUsage, exitCode(err), "%v", err)
		assert.Contains(t, errorLine(err), sha)
		assert.Contains(t, errorLine(err), sha2)
		assert.Equal(t, sum, fileSum(t, db), "a refused persist file is left byte-identical")
	})

	t.Run("host upper", func(t *testing.T) {
		up := filepath.Join(t.TempDir(), "upper")
		ws, err := buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,upper="+up)
		require.NoError(t, err)
		assert.Empty(t, fusefs.CopyOnWriteRoots(ws.FS), "a host upper may change behind the mount's back: the main connection serves it")
		require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/src/a.txt", []byte("host\n"), 0o644))
		require.NoError(t, ws.Close())
		ws, err = buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,upper="+up)
		require.NoError(t, err)
		got, err := mounts.ReadFile(ctx, ws.FS, "repo/src/a.txt")
		require.NoError(t, err)
		assert.Equal(t, "host\n", string(got))
		require.NoError(t, ws.Close())

		_, err = buildSpecs(t, "type=git,src="+dir2+",dst=/repo,writable,upper="+up)
		require.Error(t, err)
		assert.Equal(t, exitUsage, exitCode(err))
		assert.Contains(t, errorLine(err), sha)
		assert.Contains(t, errorLine(err), sha2)

		junk := t.TempDir()
		writeFile(t, filepath.Join(junk, "notes.txt"), "mine\n")
		_, err = buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,upper="+junk)
		require.Error(t, err)
		assert.Equal(t, exitUsage, exitCode(err))
		assert.Contains(t, errorLine(err), "not a usable upper layer")
		got, err = os.ReadFile(filepath.Join(junk, "notes.txt"))
		require.NoError(t, err)
		assert.Equal(t, "mine\n", string(got))
	})

	t.Run("corrupt persist file", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "upper.db")
		require.NoError(t, os.WriteFile(db, []byte(strings.Repeat("not a bolt file ", 512)), 0o600))
		sum := fileSum(t, db)
		_, err := buildSpecs(t, "type=git,src="+dir+",dst=/repo,writable,persist="+db)
		require.Error(t, err)
		assert.Equal(t, exitUsage, exitCode(err), "%v", err)
		assert.Contains(t, errorLine(err), db)
		assert.Equal(t, sum, fileSum(t, db))
	})

	host := t.TempDir()
	outer := t.TempDir()
	inner := filepath.Join(outer, "inner")
	require.NoError(t, os.Mkdir(inner, 0o755))
	bad := []struct {
		name     string
		specs    []string
		mentions []string
	}{
		{"writable on memory", []string{"type=memory,dst=/m,writable"}, []string{`"writable"`, "type memory"}},
		{"writable on host", []string{"type=host,src=" + host + ",dst=/h,writable"}, []string{`"writable"`, "type host"}},
		{"writable on skills", []string{"type=skills,src=" + host + ",dst=/s,writable"}, []string{`"writable"`, "type skills"}},
		{"upper and persist", []string{"type=git,src=" + dir + ",dst=/repo,writable,persist=/tmp/x.db,upper=/tmp/x"},
			[]string{`"persist"`, `"upper"`}},
		{"persist without writable", []string{"type=git,src=" + dir + ",dst=/repo,persist=/tmp/x.db"}, []string{`"persist"`, `"writable"`}},
		{"upper without writable", []string{"type=git,src=" + dir + ",dst=/repo,upper=/tmp/x"}, []string{`"upper"`, `"writable"`}},
		{"writable=false with upper", []string{"type=git,src=" + dir + ",dst=/repo,writable=false,upper=/tmp/x"}, []string{`"upper"`, `"writable"`}},
		{"upper inside a host source", []string{"type=git,src=" + dir + ",dst=/repo,writable,upper=" + host + "/up",
			"type=host,src=" + host + ",dst=/h"}, []string{`"upper"`, host}},
		{"upper holding a host source", []string{"type=git,src=" + dir + ",dst=/repo,writable,upper=" + outer,
			"type=host,src=" + inner + ",dst=/h"}, []string{`"upper"`, inner}},
		{"upper inside the repository", []string{"type=git,src=" + dir + ",dst=/repo,writable,upper=" + dir + "/.up"},
			[]string{`"upper"`, dir}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildSpecs(t, tt.specs...)
			require.Error(t, err)
			assert.Equal(t, exitUsage, exitCode(err), "bad input exits 2: %v", err)
			for _, m := range tt.mentions {
				assert.Contains(t, errorLine(err), m)
			}
		})
	}
	_, err := os.Stat(filepath.Join(host, "up"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused upper directory is not created")

	t.Run("upper inside the mountpoint", func(t *testing.T) {
		mp := t.TempDir()
		code, _, stderr := runCLI("mount", "--mount", "type=git,src="+dir+",dst=/repo,writable,upper="+mp+"/up", mp)
		assert.Equal(t, exitUsage, code, stderr)
		assert.Contains(t, stderr, "mountpoint")
		assert.False(t, mounted(t, mp))
	})
}

func fileSum(t *testing.T, name string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

func TestGitWritableYAML(t *testing.T) {
	dir, _ := testutil.GitRepo(t, map[string]string{"src/a.txt": "hello\n"})
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "ws.yaml")
	writeFile(t, cfg, "mounts:\n  - {type: git, src: "+dir+", dst: /repo, writable: true, persist: up.db}\n")
	_, raws, err := loadConfig(cfg)
	require.NoError(t, err)
	ms, err := validateSpecs(mountTypes(), raws)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.True(t, ms[0].Bool("writable"))
	assert.Equal(t, filepath.Join(cfgDir, "up.db"), ms[0].String("persist"), "relative to the config file")

	writeFile(t, cfg, "mounts:\n  - {type: memory, dst: /m, writable: true}\n")
	_, raws, err = loadConfig(cfg)
	require.NoError(t, err)
	_, err = validateSpecs(mountTypes(), raws)
	require.Error(t, err)
	assert.Equal(t, exitUsage, exitCode(err))
	assert.Contains(t, errorLine(err), "ws.yaml:2")
	assert.Contains(t, errorLine(err), `"writable"`)
}

// TestGitWritableOverABorrowingClone: git in the shell tool works in a
// writable /repo over a clone made with --shared, whose objects live in
// the source's object directory: the shell's namespace shows that
// directory too (workspace.WritableGit.ShellBinds).
func TestGitWritableOverABorrowingClone(t *testing.T) {
	fusetest.Need(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		if fusetest.Required() {
			t.Fatalf("bubblewrap required: %v", err)
		}
		t.Skip("bubblewrap not installed")
	}
	src, sha := testutil.GitRepo(t, map[string]string{"a.txt": "hello\n"})
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, filepath.Dir(clone), "clone", "-q", "--shared", src, clone)
	alternates, err := os.ReadFile(filepath.Join(clone, ".git", "objects", "info", "alternates"))
	require.NoError(t, err)
	require.Contains(t, string(alternates), src, "the clone borrows the source's objects")

	f := &bridgeFlags{dialect: agentbridge.DialectCursor}
	f.ws.Mounts = []string{"type=git,src=" + clone + ",dst=/repo,writable"}
	b, err := openBridge(context.Background(), newApp(io.Discard, io.Discard), f, privateKernel, t.TempDir())
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	defer func() { assert.NoError(t, b.Close()) }()
	res := b.tools.Call(context.Background(), agentbridge.DialectCursor, "shell",
		json.RawMessage(`{"command":"cd /repo && echo bye >> a.txt && git log --format=%H -1 && git diff --stat && git cat-file -p HEAD:a.txt"}`))
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, sha, "git reads the commit from the source's objects")
	assert.Contains(t, res.Text, "a.txt | 1 +")
	assert.Contains(t, res.Text, "hello\n")
}
