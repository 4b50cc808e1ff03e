package gitfs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// exportRepo is a repository with one commit: a.txt, bin.dat, dir/b.txt,
// dir/c.txt. It returns the directory and the mount of its HEAD.
func exportRepo(t *testing.T) (string, *FS) {
	dir := t.TempDir()
	gittest.InitRepo(t, dir)
	gittest.WriteFile(t, dir, "a.txt", "one\ntwo\n", 0o644)
	gittest.WriteFile(t, dir, "bin.dat", "\x00\x01\x02binary", 0o644)
	gittest.WriteFile(t, dir, "dir/b.txt", "bee\n", 0o644)
	gittest.WriteFile(t, dir, "dir/c.txt", "sea\n", 0o644)
	gittest.CommitAll(t, dir, 1, "one")
	return dir, openFS(t, Options{Src: dir})
}

func TestWriteTreeDiffCommit(t *testing.T) {
	ctx := context.Background()
	dir, f := exportRepo(t)
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	status := gittest.Git(t, dir, "status", "--porcelain")

	// src: what the changed tree holds at the edited names.
	src := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, src, "a.txt", []byte("one\n2\n"), 0o755))
	require.NoError(t, mounts.WriteFile(ctx, src, "new.txt", []byte("new\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, src, "bin.dat", []byte("\x00\x03binary"), 0o644))
	require.NoError(t, mounts.Symlink(ctx, src, "a.txt", "link"))
	edits := []Edit{{Path: "a.txt"}, {Path: "bin.dat"}, {Path: "dir", Delete: true}, {Path: "link"}, {Path: "new.txt"}}

	t.Run("unchanged is the commit's tree", func(t *testing.T) {
		tr, err := f.WriteTree(ctx, f, []Edit{{Path: "dir"}}, false)
		require.NoError(t, err)
		defer tr.Close()
		assert.Equal(t, gittest.Git(t, dir, "rev-parse", "HEAD^{tree}"), tr.ID)
		out, err := tr.Diff(ctx, Patch, nil)
		require.NoError(t, err)
		assert.Empty(t, out)
	})

	t.Run("diff applies and leaves no trace", func(t *testing.T) {
		objects := countObjects(t, dir)
		tr, err := f.WriteTree(ctx, src, edits, false)
		require.NoError(t, err)
		patch, err := tr.Diff(ctx, Patch, nil)
		require.NoError(t, err)
		assert.Contains(t, patch, "GIT binary patch")
		assert.Contains(t, patch, "old mode 100644\nnew mode 100755")
		assert.Contains(t, patch, "deleted file mode 100644")
		assert.Contains(t, patch, "new file mode 120000")
		ns, err := tr.Diff(ctx, NameStatus, nil)
		require.NoError(t, err)
		assert.Equal(t, "M\ta.txt\nM\tbin.dat\nD\tdir/b.txt\nD\tdir/c.txt\nA\tlink\nA\tnew.txt\n", ns)
		st, err := tr.Diff(ctx, Stat, []string{"a.txt"})
		require.NoError(t, err)
		assert.Contains(t, st, "a.txt")
		assert.NotContains(t, st, "new.txt", "limited to the paths asked")
		require.NoError(t, tr.Close())
		assert.Equal(t, objects, countObjects(t, dir), "a diff writes no object into the repository")

		// git apply on a fresh checkout reproduces the change.
		clone := filepath.Join(t.TempDir(), "clone")
		gittest.Git(t, t.TempDir(), "clone", "-q", dir, clone)
		cmd := exec.Command("git", "apply", "--index")
		cmd.Dir, cmd.Stdin = clone, strings.NewReader(patch)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		got, err := os.ReadFile(filepath.Join(clone, "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, "one\n2\n", string(got))
		got, err = os.ReadFile(filepath.Join(clone, "bin.dat"))
		require.NoError(t, err)
		assert.Equal(t, "\x00\x03binary", string(got))
		target, err := os.Readlink(filepath.Join(clone, "link"))
		require.NoError(t, err)
		assert.Equal(t, "a.txt", target)
		_, err = os.Stat(filepath.Join(clone, "dir"))
		assert.True(t, os.IsNotExist(err))
	})

	t.Run("commit on a branch", func(t *testing.T) {
		tr, err := f.WriteTree(ctx, src, edits, true)
		require.NoError(t, err)
		defer tr.Close()
		id, err := tr.Commit(ctx, "change things", "work", false)
		require.NoError(t, err)
		assert.Equal(t, id, gittest.Git(t, dir, "rev-parse", "refs/heads/work"))
		assert.Equal(t, head, gittest.Git(t, dir, "rev-parse", "work^"))
		assert.Equal(t, "change things", gittest.Git(t, dir, "log", "-1", "--format=%s", "work"))
		assert.Equal(t, tr.ID, gittest.Git(t, dir, "rev-parse", "work^{tree}"))
		assert.Equal(t, head, gittest.Git(t, dir, "rev-parse", "HEAD"), "HEAD never moves")
		assert.Equal(t, status, gittest.Git(t, dir, "status", "--porcelain"), "the working tree and index are untouched")

		_, err = tr.Commit(ctx, "again", "work", false)
		assert.ErrorIs(t, err, ErrRefExists)
		assert.Contains(t, err.Error(), `"work"`)
		id2, err := tr.Commit(ctx, "again", "work", true)
		require.NoError(t, err)
		assert.NotEqual(t, id, id2)
		assert.Equal(t, id2, gittest.Git(t, dir, "rev-parse", "refs/heads/work"))

		branch := gittest.Git(t, dir, "symbolic-ref", "--short", "HEAD")
		_, err = tr.Commit(ctx, "x", branch, true)
		assert.ErrorIs(t, err, ErrBadBranch, "the checked-out branch is never moved, even with force")
		_, err = tr.Commit(ctx, "x", "bad..name", false)
		assert.ErrorIs(t, err, ErrBadBranch)
		assert.Equal(t, head, gittest.Git(t, dir, "rev-parse", "HEAD"))
	})
}

// countObjects counts the repository's loose objects and packs.
func countObjects(t *testing.T, dir string) string {
	return gittest.Git(t, dir, "count-objects")
}
