package gitfs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp/syntax"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
)

// partialFiles is the tree of the partial clone tests: three directories
// of small files, one file in it holding "needle".
func partialFiles() map[string]string {
	files := map[string]string{}
	for _, d := range []string{"a", "b", "c/deep"} {
		for i := range 6 {
			files[fmt.Sprintf("%s/f%d.txt", d, i)] = fmt.Sprintf("file %d of %s\n", i, d)
		}
	}
	files["b/needle.go"] = "package b\n\nconst needle = 1\n"
	return files
}

// readDirNames lists a directory's names.
func readDirNames(ctx context.Context, f *FS, name string) ([]string, error) {
	ents, err := f.ReadDir(ctx, name)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	return names, err
}

// partialRemote is a repository of partialFiles served over git:// on
// loopback, ready to be cloned partially: its directory and the daemon.
func partialRemote(t *testing.T) (string, *testutil.GitDaemon) {
	t.Helper()
	base := t.TempDir()
	src := filepath.Join(base, "src")
	testutil.GitInit(t, src)
	testutil.GitCommit(t, src, partialFiles(), "one")
	testutil.AllowPartialClones(t, src)
	return src, testutil.ServeGit(t, base)
}

// partialClone clones the remote with filter into a new directory.
func partialClone(t *testing.T, d *testutil.GitDaemon, filter string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testutil.PartialClone(t, d.URL+"src", filter, dir)
	return dir
}

// missingObjects lists the objects of HEAD the clone lacks, as git sees it
// (rev-list --missing=print fetches nothing).
func missingObjects(t *testing.T, clone string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(testutil.Git(t, clone, "rev-list", "--objects", "--missing=print", "HEAD"), "\n") {
		if id, ok := strings.CutPrefix(line, "?"); ok {
			out = append(out, id)
		}
	}
	return out
}

// TestPartialCloneFetchesOnRead: a blobless clone mounts without a fetch
// and lists its tree; a file read is fetched (one round trip) and kept in
// the clone, so a second mount reads it without the remote; a directory
// listed with its attributes fetches its blobs in one round trip.
func TestPartialCloneFetchesOnRead(t *testing.T) {
	_, d := partialRemote(t)
	clone := partialClone(t, d, "blob:none")
	conns := d.Conns.Load()
	before := missingObjects(t, clone)
	require.Len(t, before, len(partialFiles()), "the clone has no blob")

	ctx := context.Background()
	f := openFS(t, Options{Src: clone})
	names, err := readDirNames(ctx, f, "c/deep")
	require.NoError(t, err)
	assert.Len(t, names, 6)
	assert.Equal(t, conns, d.Conns.Load(), "mounting and listing fetch nothing")

	data, err := mounts.ReadFile(ctx, f, "a/f1.txt")
	require.NoError(t, err)
	assert.Equal(t, "file 1 of a\n", string(data))
	assert.Equal(t, conns+1, d.Conns.Load(), "one fetch")
	assert.Len(t, missingObjects(t, clone), len(before)-1, "the blob is kept in the clone")

	ents, attrs, err := f.StatDir(ctx, "b")
	require.NoError(t, err)
	require.Len(t, ents, 7)
	for i, e := range ents {
		want := int64(len(partialFiles()["b/"+e.Name]))
		assert.Equal(t, want, attrs[i].Size, e.Name)
	}
	assert.Equal(t, conns+2, d.Conns.Load(), "the directory's seven blobs in one fetch")
	assert.Len(t, missingObjects(t, clone), len(before)-8)
	assert.Equal(t, int64(2), f.obj.Fetches())

	again := openFS(t, Options{Src: clone})
	data, err = mounts.ReadFile(ctx, again, "b/needle.go")
	require.NoError(t, err)
	assert.Equal(t, partialFiles()["b/needle.go"], string(data))
	assert.Equal(t, conns+2, d.Conns.Load(), "a second mount reads what the first fetched from the clone")
}

// TestPartialCloneOffline: offline, a file whose blob the clone lacks is
// EIO naming the object, nothing is fetched, and the rest is served.
func TestPartialCloneOffline(t *testing.T) {
	_, d := partialRemote(t)
	clone := partialClone(t, d, "blob:none")
	ctx := context.Background()
	// One blob fetched before, by git itself.
	testutil.Git(t, clone, "cat-file", "-p", "HEAD:a/f0.txt")
	conns := d.Conns.Load()

	f := openFS(t, Options{Src: clone, Offline: true})
	data, err := mounts.ReadFile(ctx, f, "a/f0.txt")
	require.NoError(t, err, "what the clone holds is served")
	assert.Equal(t, "file 0 of a\n", string(data))

	oid := testutil.Git(t, clone, "rev-parse", "HEAD:a/f1.txt")
	_, err = mounts.ReadFile(ctx, f, "a/f1.txt")
	require.ErrorIs(t, err, syscall.EIO)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "a/f1.txt", pe.Path)
	assert.Contains(t, err.Error(), oid)
	assert.Contains(t, err.Error(), "offline")
	_, err = f.Stat(ctx, "a/f1.txt")
	assert.ErrorIs(t, err, syscall.EIO, "its size is in the blob")
	_, _, err = f.StatDir(ctx, "a")
	assert.ErrorIs(t, err, syscall.EIO)

	names, err := readDirNames(ctx, f, "a")
	require.NoError(t, err, "the tree is served")
	assert.Len(t, names, 6)
	assert.Equal(t, conns, d.Conns.Load(), "offline fetches nothing")
	assert.Zero(t, f.obj.Fetches())
}

// TestPartialCloneRemoteDown: with the promisor remote gone, a missing
// blob is EIO naming the object and git's reason, and the rest of the
// tree is served; once the remote is back the read succeeds.
func TestPartialCloneRemoteDown(t *testing.T) {
	src, d := partialRemote(t)
	clone := partialClone(t, d, "blob:none")
	ctx := context.Background()
	f := openFS(t, Options{Src: clone})
	_, err := mounts.ReadFile(ctx, f, "a/f0.txt")
	require.NoError(t, err)
	d.Stop()

	oid := testutil.Git(t, clone, "rev-parse", "HEAD:c/deep/f2.txt")
	_, err = mounts.ReadFile(ctx, f, "c/deep/f2.txt")
	require.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), oid)
	assert.Contains(t, err.Error(), `promisor remote "origin"`)
	assert.Contains(t, err.Error(), "git fetch:")

	data, err := mounts.ReadFile(ctx, f, "a/f0.txt")
	require.NoError(t, err, "what was fetched is still served")
	assert.Equal(t, "file 0 of a\n", string(data))
	names, err := readDirNames(ctx, f, "c/deep")
	require.NoError(t, err)
	assert.Len(t, names, 6)

	// The remote back (at another port): the next read fetches.
	back := testutil.ServeGit(t, filepath.Dir(src))
	testutil.Git(t, clone, "remote", "set-url", "origin", back.URL+"src")
	data, err = mounts.ReadFile(ctx, f, "c/deep/f2.txt")
	require.NoError(t, err)
	assert.Equal(t, "file 2 of c/deep\n", string(data))
	assert.Equal(t, int64(1), back.Conns.Load())
}

// TestPartialCloneTreeless: a tree-less clone fetches the trees on the
// way (its root's, with every tree below it, at mount) and its blobs as
// they are read.
func TestPartialCloneTreeless(t *testing.T) {
	_, d := partialRemote(t)
	clone := partialClone(t, d, "tree:0")
	conns := d.Conns.Load()
	ctx := context.Background()
	f := openFS(t, Options{Src: clone})
	assert.Equal(t, conns+1, d.Conns.Load(), "the root tree, fetched at mount")
	names, err := readDirNames(ctx, f, "c/deep")
	require.NoError(t, err)
	assert.Len(t, names, 6)
	assert.Equal(t, conns+1, d.Conns.Load(), "the trees below came with it")
	data, err := mounts.ReadFile(ctx, f, "c/deep/f5.txt")
	require.NoError(t, err)
	assert.Equal(t, "file 5 of c/deep\n", string(data))
	assert.Equal(t, conns+2, d.Conns.Load())

	_, err = Open(ctx, Options{Src: partialClone(t, d, "tree:0"), Offline: true, CacheDir: t.TempDir()})
	require.ErrorIs(t, err, ErrBadSource, "offline, a tree-less clone has no root tree")
	assert.Contains(t, err.Error(), "offline")
}

// TestPartialCloneSearchReadsCandidates: with the tree's index in the
// cache directory (built by a mount of the full repository), a search of
// a partial clone fetches only the files the index names, in one fetch;
// without one, the build fetches every blob in one fetch, not one by one.
func TestPartialCloneSearchReadsCandidates(t *testing.T) {
	src, d := partialRemote(t)
	cache := t.TempDir()
	ctx := context.Background()
	full := openFS(t, Options{Src: src, CacheDir: cache})
	ready, err := full.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)

	re, err := syntax.Parse("file 1 of", syntax.Perl)
	require.NoError(t, err)

	// The build wrote the tree's pack: its content is there, and
	// nothing is fetched.
	clone := partialClone(t, d, "blob:none")
	before := missingObjects(t, clone)
	conns := d.Conns.Load()
	f := openFS(t, Options{Src: clone, CacheDir: cache})
	names, complete, err := f.Candidates(ctx, ".", re)
	require.NoError(t, err)
	require.True(t, complete)
	for _, n := range names {
		data, err := mounts.ReadFile(ctx, f, n)
		require.NoError(t, err)
		assert.Contains(t, string(data), "file 1 of")
	}
	require.NoError(t, f.Close())
	assert.Equal(t, conns, d.Conns.Load(), "read from the tree pack: no fetch")
	assert.Equal(t, before, missingObjects(t, clone))

	// Without the pack, the candidates are fetched.
	require.NoError(t, os.Remove(treePackPath(cache, full.search.key)))
	clone = partialClone(t, d, "blob:none")
	before = missingObjects(t, clone)
	conns = d.Conns.Load()
	f = openFS(t, Options{Src: clone, CacheDir: cache})
	names, complete, err = f.Candidates(ctx, ".", re)
	require.NoError(t, err)
	require.True(t, complete, "the index in the cache directory narrows")
	assert.Equal(t, []string{"a/f1.txt", "b/f1.txt", "c/deep/f1.txt"}, names)
	for _, n := range names {
		// One by one, as a reader that knows nothing of the batch.
		data, err := mounts.ReadFile(ctx, f, n)
		require.NoError(t, err)
		assert.Contains(t, string(data), "file 1 of")
	}
	assert.Equal(t, conns+1, d.Conns.Load(), "the candidates in one fetch")
	assert.Len(t, missingObjects(t, clone), len(before)-len(names), "only the candidates were fetched")

	// A fresh cache: the build fetches what it indexes in one go.
	other := partialClone(t, d, "blob:none")
	conns = d.Conns.Load()
	g := openFS(t, Options{Src: other, CacheDir: t.TempDir()})
	ready, err = g.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)
	assert.Equal(t, conns+1, d.Conns.Load(), "one fetch for the whole build")
	assert.Empty(t, missingObjects(t, other))
	needle, err := syntax.Parse("const needle", syntax.Perl)
	require.NoError(t, err)
	names, complete, err = g.Candidates(ctx, ".", needle)
	require.NoError(t, err)
	assert.True(t, complete)
	assert.True(t, slices.Equal([]string{"b/needle.go"}, names), "%v", names)
}

// TestPartialCloneDotGit: the .git of a writable copy of a partial clone
// is made without fetching a blob (one the clone lacks is entered with
// size 0, for git to check when it looks), and git finds the checkout
// clean.
func TestPartialCloneDotGit(t *testing.T) {
	_, d := partialRemote(t)
	clone := partialClone(t, d, "blob:none")
	ctx := context.Background()
	f := openFS(t, Options{Src: clone})
	_, err := mounts.ReadFile(ctx, f, "a/f0.txt")
	require.NoError(t, err)
	conns := d.Conns.Load()
	files, err := f.DotGit(ctx, DotGitOptions{})
	require.NoError(t, err)
	assert.Equal(t, conns, d.Conns.Load(), "no fetch for the index")

	wt := t.TempDir()
	for name, content := range files {
		p := filepath.Join(wt, ".git", filepath.FromSlash(strings.TrimSuffix(name, "/")))
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, content, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(wt, ".git", "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = false\n"), 0o644))
	testutil.WriteFiles(t, wt, partialFiles())
	assert.Empty(t, testutil.Git(t, wt, "status", "--porcelain"), "clean")
	assert.Equal(t, conns, d.Conns.Load(), "git compared the files by content id, fetching nothing")
	stage := testutil.Git(t, wt, "ls-files", "--debug", "a/f0.txt", "a/f1.txt")
	assert.Contains(t, stage, "size: 12", "a/f0.txt was fetched before: its size")
}
