package gitfs

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp/syntax"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// superproject makes a repository "super" with a submodule "lib" (itself
// with a submodule "inner"), as git submodule add makes them: the
// submodules' repositories in .git/modules. It returns the directories
// of the superproject and of lib's origin, and lib's pinned commit.
func superproject(t *testing.T, url func(dir string) string) (super, lib, libCommit string) {
	t.Helper()
	base := t.TempDir()
	inner := filepath.Join(base, "inner")
	testutil.GitInit(t, inner)
	testutil.GitCommit(t, inner, map[string]string{"inner.txt": "deepest\n"}, "inner")
	lib = filepath.Join(base, "lib")
	testutil.GitInit(t, lib)
	testutil.GitCommit(t, lib, map[string]string{"lib.go": "package lib // submarine\n", "doc/a.md": "docs\n"}, "lib")
	testutil.Git(t, lib, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url(inner), "inner")
	libCommit = testutil.GitCommit(t, lib, nil, "with inner")
	super = filepath.Join(base, "super")
	testutil.GitInit(t, super)
	testutil.GitCommit(t, super, map[string]string{"main.go": "package main\n"}, "super")
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url(lib), "lib")
	testutil.Git(t, super, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "--recursive", "-q")
	testutil.GitCommit(t, super, nil, "with lib")
	return super, lib, libCommit
}

func plainPath(dir string) string { return dir }

func readDirNamesOf(t *testing.T, f *FS, name string) []string {
	t.Helper()
	names, err := readDirNames(context.Background(), f, name)
	require.NoError(t, err)
	return names
}

// TestSubmodules: with Submodules, a gitlink serves its submodule's tree
// at the pinned commit, from .git/modules, its own submodules too;
// without, an empty directory.
func TestSubmodules(t *testing.T) {
	super, _, libCommit := superproject(t, plainPath)
	ctx := context.Background()

	f := openFS(t, Options{Src: super, Submodules: true})
	assert.Equal(t, []string{".gitmodules", "lib", "main.go"}, readDirNamesOf(t, f, "."))
	assert.Equal(t, []string{".gitmodules", "doc", "inner", "lib.go"}, readDirNamesOf(t, f, "lib"))
	data, err := mounts.ReadFile(ctx, f, "lib/lib.go")
	require.NoError(t, err)
	assert.Equal(t, "package lib // submarine\n", string(data))
	data, err = mounts.ReadFile(ctx, f, "lib/inner/inner.txt")
	require.NoError(t, err, "a submodule's submodule")
	assert.Equal(t, "deepest\n", string(data))
	a, err := f.Stat(ctx, "lib")
	require.NoError(t, err)
	assert.True(t, a.Mode.IsDir())
	assert.Equal(t, uint32(4), a.Nlink, "2 + doc and inner")
	x, err := f.GetXattr(ctx, "lib", xattrSubmodule)
	require.NoError(t, err)
	assert.Equal(t, libCommit, string(x))
	ents, attrs, err := f.StatDir(ctx, ".")
	require.NoError(t, err)
	for i, e := range ents {
		if e.Name == "lib" {
			assert.Equal(t, a, attrs[i], "listed as it stats")
		}
	}

	off := openFS(t, Options{Src: super})
	assert.Empty(t, readDirNamesOf(t, off, "lib"), "without Submodules, an empty directory")
	_, err = mounts.ReadFile(ctx, off, "lib/lib.go")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestSubmodulesSearch: the index of a mount with submodules covers their
// files, and is not the index of the tree alone.
func TestSubmodulesSearch(t *testing.T) {
	super, _, _ := superproject(t, plainPath)
	ctx := context.Background()
	cache := t.TempDir()
	re, err := syntax.Parse("submarine", syntax.Perl)
	require.NoError(t, err)

	f := openFS(t, Options{Src: super, Submodules: true, CacheDir: cache})
	ready, err := f.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)
	names, complete, err := f.Candidates(ctx, ".", re)
	require.NoError(t, err)
	require.True(t, complete)
	assert.Equal(t, []string{"lib/lib.go"}, names)

	g := openFS(t, Options{Src: super, CacheDir: cache})
	ready, err = g.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)
	names, complete, err = g.Candidates(ctx, ".", re)
	require.NoError(t, err)
	require.True(t, complete)
	assert.Empty(t, names, "the tree's own index, without the submodule")
}

// TestSubmodulesFromURL: a superproject without .git/modules (a bare
// clone) finds a submodule by the URL .gitmodules gives, cloned into the
// cache directory; offline with nothing cached, it is an empty directory.
func TestSubmodulesFromURL(t *testing.T) {
	super, _, _ := superproject(t, func(dir string) string { return "file://" + dir })
	bare := filepath.Join(t.TempDir(), "super.git")
	testutil.Git(t, filepath.Dir(bare), "clone", "-q", "--bare", super, bare)
	ctx := context.Background()

	off := openFS(t, Options{Src: bare, Submodules: true, Offline: true})
	assert.Empty(t, readDirNamesOf(t, off, "lib"), "offline, nothing cached: empty")

	cache := t.TempDir()
	f := openFS(t, Options{Src: bare, Submodules: true, CacheDir: cache})
	data, err := mounts.ReadFile(ctx, f, "lib/lib.go")
	require.NoError(t, err)
	assert.Equal(t, "package lib // submarine\n", string(data))
	data, err = mounts.ReadFile(ctx, f, "lib/inner/inner.txt")
	require.NoError(t, err)
	assert.Equal(t, "deepest\n", string(data))

	again := openFS(t, Options{Src: bare, Submodules: true, CacheDir: cache, Offline: true})
	data, err = mounts.ReadFile(ctx, again, "lib/lib.go")
	require.NoError(t, err, "offline, the clone cached before serves")
	assert.Equal(t, "package lib // submarine\n", string(data))
}

// TestSubmoduleCommitMissing: a gitlink pinning a commit its repository
// lacks is EIO naming the path and the commit; the rest is served.
func TestSubmoduleCommitMissing(t *testing.T) {
	super, _, _ := superproject(t, plainPath)
	missing := "0123456789abcdef0123456789abcdef01234567"
	testutil.Git(t, super, "update-index", "--cacheinfo", "160000,"+missing+",lib")
	testutil.Git(t, super, "commit", "-q", "-m", "lib moved to a commit nobody has")
	ctx := context.Background()

	f := openFS(t, Options{Src: super, Submodules: true})
	_, err := f.ReadDir(ctx, "lib")
	require.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "submodule lib")
	assert.Contains(t, err.Error(), missing)
	_, err = mounts.ReadFile(ctx, f, "lib/lib.go")
	require.ErrorIs(t, err, syscall.EIO)
	data, err := mounts.ReadFile(ctx, f, "main.go")
	require.NoError(t, err, "the rest is served")
	assert.Equal(t, "package main\n", string(data))
}

// TestSubmoduleChangesNotExported: a change inside a served submodule is
// refused by name when the mount's changes are written as a tree; one
// outside it still is written.
func TestSubmoduleChangesNotExported(t *testing.T) {
	super, _, _ := superproject(t, plainPath)
	ctx := context.Background()
	f := openFS(t, Options{Src: super, Submodules: true})
	_, err := f.WriteTree(ctx, f, []Edit{{Path: "lib/lib.go"}}, false)
	require.ErrorIs(t, err, ErrInSubmodule)
	assert.Contains(t, err.Error(), "lib/lib.go")
	tr, err := f.WriteTree(ctx, f, []Edit{{Path: "main.go"}}, false)
	require.NoError(t, err)
	defer tr.Close()
	assert.NotEmpty(t, tr.ID)
}
