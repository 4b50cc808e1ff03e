package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/workspace"
)

// TestGitSubmodules: the submodules key serves a submodule's tree at its
// pinned commit, read-only and under a writable layer; without the key it
// is an empty directory.
func TestGitSubmodules(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	lib := filepath.Join(base, "lib")
	testutil.GitInit(t, lib)
	testutil.GitCommit(t, lib, map[string]string{"lib.txt": "from the submodule\n"}, "lib")
	super := filepath.Join(base, "super")
	testutil.GitInit(t, super)
	testutil.GitCommit(t, super, map[string]string{"main.txt": "top\n"}, "super")
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	testutil.GitCommit(t, super, nil, "with lib")
	src := "type=git,src=" + super + ",dst=/repo"
	var ws *workspace.Workspace
	readDirNames := func(name string) ([]string, error) {
		ents, err := ws.FS.ReadDir(ctx, name)
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name)
		}
		return names, err
	}

	ws, err := buildSpecs(t, src)
	require.NoError(t, err)
	names, err := readDirNames("repo/lib")
	require.NoError(t, err)
	assert.Empty(t, names, "without the key, an empty directory")
	require.NoError(t, ws.Close())

	ws, err = buildSpecs(t, src+",submodules")
	require.NoError(t, err)
	got, err := mounts.ReadFile(ctx, ws.FS, "repo/lib/lib.txt")
	require.NoError(t, err)
	assert.Equal(t, "from the submodule\n", string(got))
	require.NoError(t, ws.Close())

	ws, err = buildSpecs(t, src+",submodules,writable")
	require.NoError(t, err)
	defer ws.Close()
	got, err = mounts.ReadFile(ctx, ws.FS, "repo/lib/lib.txt")
	require.NoError(t, err)
	assert.Equal(t, "from the submodule\n", string(got))
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/lib/lib.txt", []byte("changed\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, ws.FS, "repo/lib/new.txt", []byte("new\n"), 0o644))
	got, err = mounts.ReadFile(ctx, ws.FS, "repo/lib/lib.txt")
	require.NoError(t, err)
	assert.Equal(t, "changed\n", string(got))
	names, err = readDirNames("repo/lib")
	require.NoError(t, err)
	assert.Equal(t, []string{"lib.txt", "new.txt"}, names)
}
