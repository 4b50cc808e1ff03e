package agentbridge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
)

// TestGrepMatchesRipgrepThroughTheIndex commits the random tree of
// TestGrepMatchesRipgrep, mounts the commit, and compares grep with rg
// while the git mount's index builds and once it is there: the
// candidates it chooses change what is read, never what is found.
func TestGrepMatchesRipgrepThroughTheIndex(t *testing.T) {
	rg := needRipgrep(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	dir, _ := ripgrepTree(t)
	bare := filepath.Join(t.TempDir(), "repo.git")
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"--git-dir=" + bare, "--work-tree=" + dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput()
	require.NoError(t, err, string(out))
	git("add", "-A")
	git("commit", "-q", "-m", "tree")
	g, err := gitfs.Open(ctx, gitfs.Options{Src: bare, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	u, w := realWorkspace(t, map[string]mounts.FS{"/repo": g, "/mem": openHost(t, t.TempDir())})

	t.Run("while the index builds", func(t *testing.T) { checkRipgrep(t, rg, dir, w, "/repo") })
	ready, err := g.WaitIndex(ctx)
	require.NoError(t, err)
	require.True(t, ready)
	re, err := syntax.Parse("(?m)alpha", syntax.Perl)
	require.NoError(t, err)
	names, complete, err := mounts.Candidates(ctx, u, "repo", re)
	require.NoError(t, err)
	require.True(t, complete, "the union narrows through the git mount's index")
	assert.NotEmpty(t, names)
	t.Run("through the index", func(t *testing.T) { checkRipgrep(t, rg, dir, w, "/repo") })
}
