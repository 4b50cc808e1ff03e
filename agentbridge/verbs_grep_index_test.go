package agentbridge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
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
		t.Helper()
		testutil.Git(t, dir, append([]string{"--git-dir=" + bare, "--work-tree=" + dir}, args...)...)
	}
	testutil.Git(t, dir, "init", "-q", "--bare", bare)
	git("add", "-A")
	git("commit", "-q", "-m", "tree")
	cache := t.TempDir()
	g, err := gitfs.Open(ctx, gitfs.Options{Src: bare, CacheDir: cache})
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

	// From the root, over a host mount whose .gitignore applies: the
	// host is walked, the git mount below the root answers from its
	// index; the result is the scan's, order included.
	hostDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, ".gitignore"), []byte("skip/\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(hostDir, "skip"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "skip/a.txt"), []byte("alpha\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "b.txt"), []byte("alpha beta\n"), 0o644))
	off, err := gitfs.Open(ctx, gitfs.Options{Src: bare, CacheDir: t.TempDir(), Index: gitfs.IndexOff})
	require.NoError(t, err)
	t.Cleanup(func() { off.Close() })
	var opens atomic.Int64
	counted := mounts.Watch(g, mounts.Watcher{Done: func(_ context.Context, c mounts.Call, _ error) {
		if c.Op == mounts.OpOpen {
			opens.Add(1)
		}
	}})
	_, indexed := realWorkspace(t, map[string]mounts.FS{"/repo": counted, "/host": openHost(t, hostDir)})
	_, scanned := realWorkspace(t, map[string]mounts.FS{"/repo": off, "/host": openHost(t, hostDir)})
	for _, pat := range ripgrepPatterns {
		for _, mode := range []string{"files", "content"} {
			args := obj{"pattern": pat, "path": "/", "outputMode": mode, "headLimit": 0}
			assert.Equal(t, ok(t, scanned, "grep", args), ok(t, indexed, "grep", args), "%q %s", pat, mode)
		}
	}
	opens.Store(0)
	ok(t, indexed, "grep", obj{"pattern": "fixme fixme fixme", "path": "/"})
	all := ok(t, indexed, "glob", obj{"pattern": "**", "path": "/repo"})
	assert.Less(t, opens.Load(), int64(strings.Count(all, "\n")/2), "the git mount below the root read only candidates")

	// The next commit (files modified, deleted, added) narrows from its
	// first grep with this commit's index, found in the cache directory,
	// and reads what changed: the results are still rg's.
	changed := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch changed++; changed % 7 {
		case 0:
			return os.Remove(path)
		case 1:
			return os.WriteFile(path, []byte("alpha, modified\nfunc x := 2\n"), 0o644)
		}
		return nil
	}))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "new"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new", "added.go"), []byte("func added() { return } // TODO alpha\n"), 0o644))
	git("add", "-A")
	git("commit", "-q", "-m", "next")
	next, err := gitfs.Open(ctx, gitfs.Options{Src: bare, CacheDir: cache})
	require.NoError(t, err)
	t.Cleanup(func() { next.Close() })
	nu, nw := realWorkspace(t, map[string]mounts.FS{"/repo": next})
	_, complete, err = mounts.Candidates(ctx, nu, "repo", re)
	require.NoError(t, err)
	require.True(t, complete, "the first search narrows with the parent's index")
	t.Run("through the parent's index", func(t *testing.T) { checkRipgrep(t, rg, dir, nw, "/repo") })
}
