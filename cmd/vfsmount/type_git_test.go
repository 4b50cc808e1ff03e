package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/workspace"
)

// gitRepo makes a one-commit repository holding src/a.txt and returns its
// directory and the commit's SHA.
func gitRepo(t *testing.T) (string, string) {
	return gitCommit(t, map[string]string{"src/a.txt": "hello\n"})
}

// gitCommit makes a repository whose one commit holds files (name ->
// content) and returns its directory and the commit's SHA.
func gitCommit(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoErrorf(t, cmd.Run(), "git %v: %s", args, errb.String())
		return strings.TrimSpace(out.String())
	}
	run("init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	run("add", "-A")
	run("commit", "-q", "-m", "one")
	return dir, run("rev-parse", "HEAD")
}

func TestGitType(t *testing.T) {
	ctx := context.Background()
	dir, sha := gitRepo(t)
	reg := registry{"git": gitType(), "memory": memoryType()}
	build := func(spec string) (*workspace.Workspace, error) {
		raw, err := parseSpec(spec, "/")
		require.NoError(t, err)
		ms, err := validateSpecs(reg, []rawSpec{raw})
		if err != nil {
			return nil, err
		}
		return buildWorkspace(ctx, &workspaceConfig{Mounts: ms, Types: reg}, nil)
	}

	t.Run("serves the pinned commit", func(t *testing.T) {
		for _, spec := range []string{
			"type=git,src=" + dir + ",rev=main,dst=/repo",
			"type=git,src=" + dir + ",dst=/repo",
			"type=git,source=" + dir + ",rev=" + sha[:8] + ",target=/repo",
		} {
			ws, err := build(spec)
			require.NoError(t, err, spec)
			got, err := mounts.ReadFile(ctx, ws.FS, "repo/src/a.txt")
			require.NoError(t, err)
			assert.Equal(t, "hello\n", string(got))
			require.Len(t, ws.Mounts(), 1)
			assert.Equal(t, "git", ws.Mounts()[0].Type)
			assert.Equal(t, "git@"+sha[:12], ws.Mounts()[0].Source)
			assert.False(t, ws.Mounts()[0].Writable)
			require.NoError(t, ws.Close())
		}
	})

	t.Run("subdir", func(t *testing.T) {
		ws, err := build("type=git,src=" + dir + ",subdir=src,dst=/repo")
		require.NoError(t, err)
		defer ws.Close()
		got, err := mounts.ReadFile(ctx, ws.FS, "repo/a.txt")
		require.NoError(t, err)
		assert.Equal(t, "hello\n", string(got))
	})

	bad := []struct {
		name, spec, mention string
	}{
		{"src is not a repository", "type=git,src=" + t.TempDir() + ",dst=/repo", "src"},
		{"src is missing", "type=git,src=/no/such/dir,dst=/repo", "/no/such/dir"},
		{"src key missing", "type=git,dst=/repo", `"src"`},
		{"rev does not exist", "type=git,src=" + dir + ",rev=nope,dst=/repo", `rev "nope"`},
		{"subdir is a file", "type=git,src=" + dir + ",subdir=src/a.txt,dst=/repo", "src/a.txt"},
		{"unknown key", "type=git,src=" + dir + ",branch=main,dst=/repo", `"branch"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(tt.spec)
			require.Error(t, err)
			assert.Equal(t, exitUsage, exitCode(err), "bad input exits 2: %v", err)
			assert.Contains(t, errorLine(err), tt.mention)
		})
	}
}
