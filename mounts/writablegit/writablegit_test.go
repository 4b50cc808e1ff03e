package writablegit_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/mounts/writablegit"
)

// newRepo makes a repository with one commit of a.txt and dir/b.txt, and a
// writable git mount over it with a memory upper.
func newRepo(t *testing.T) (src string, w *writablegit.FS) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the git program is needed:", err)
	}
	src, _ = testutil.GitRepo(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	ctx := context.Background()
	g, err := gitfs.Open(ctx, gitfs.Options{Src: src, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	w, err = writablegit.New(ctx, g, memfs.New(memfs.Options{}), overlayfs.Options{})
	require.NoError(t, err)
	return src, w
}

func TestDiffAndCommit(t *testing.T) {
	ctx := context.Background()
	src, w := newRepo(t)
	assert.Equal(t, "copy-on-write over git@"+w.Git().Commit()[:12], w.Describe().Source)

	text, err := w.Diff(ctx, gitfs.NameStatus)
	require.NoError(t, err)
	assert.Empty(t, text, "no change, no diff")
	id, err := w.Commit(ctx, "nothing", "agent/none", false)
	require.NoError(t, err)
	assert.Empty(t, id, "no change, no commit")

	require.NoError(t, mounts.WriteFile(ctx, w, "a.txt", []byte("a, edited\n"), 0o644))
	require.NoError(t, mounts.Rename(ctx, w, "dir", "moved", 0))
	require.NoError(t, mounts.WriteFile(ctx, w, "new.txt", []byte("new\n"), 0o644))
	text, err = w.Diff(ctx, gitfs.NameStatus)
	require.NoError(t, err)
	assert.Equal(t, "M\ta.txt\nR100\tdir/b.txt\tmoved/b.txt\nA\tnew.txt\n", text)
	text, err = w.Diff(ctx, gitfs.NameStatus, "moved")
	require.NoError(t, err)
	assert.Equal(t, "A\tmoved/b.txt\n", text, "limited to names")

	// The patch applies to a checkout of the commit and gives the mount's tree.
	patch, err := w.Diff(ctx, gitfs.Patch)
	require.NoError(t, err)
	co := t.TempDir()
	testutil.Git(t, co, "clone", "-q", src, ".")
	apply := exec.Command("git", "-C", co, "apply", "--index", "-")
	apply.Stdin = strings.NewReader(patch)
	out, err := apply.CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(filepath.Join(co, "moved", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "b\n", string(b))

	id, err = w.Commit(ctx, "agent work", "agent/work", false)
	require.NoError(t, err)
	require.Len(t, id, 40)
	assert.Equal(t, id, testutil.Git(t, src, "rev-parse", "refs/heads/agent/work"))
	assert.Equal(t, w.Git().Commit(), testutil.Git(t, src, "rev-parse", "agent/work^"), "on the pinned commit")
	assert.Equal(t, "main", testutil.Git(t, src, "branch", "--show-current"), "the source's branch is untouched")
	_, err = w.Commit(ctx, "again", "agent/work", false)
	assert.ErrorIs(t, err, gitfs.ErrRefExists)
}

// TestDiffStates diffs another state of the mount against the live one.
func TestDiffStates(t *testing.T) {
	ctx := context.Background()
	_, w := newRepo(t)
	// Another state of the same commit, as a checkpoint's upper gives one.
	then, err := w.Over(ctx, memfs.New(memfs.Options{}))
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, then, "a.txt", []byte("first\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, w, "a.txt", []byte("second\n"), 0o644))
	require.NoError(t, mounts.Remove(ctx, w, "dir/b.txt"))

	text, err := w.DiffStates(ctx, then, w, gitfs.NameStatus)
	require.NoError(t, err)
	assert.Equal(t, "M\ta.txt\nD\tdir/b.txt\n", text)
	text, err = w.DiffStates(ctx, then, w, gitfs.Patch, "a.txt")
	require.NoError(t, err)
	assert.Contains(t, text, "-first\n+second\n")
}
