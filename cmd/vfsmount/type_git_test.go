package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/workspace"
)

func TestGitType(t *testing.T) {
	ctx := context.Background()
	dir, sha := testutil.GitRepo(t, map[string]string{"src/a.txt": "hello\n"})
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
