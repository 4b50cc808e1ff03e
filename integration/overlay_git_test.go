package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
	"github.com/vfsmount/vfsmount/union"
)

// TestGitStatusReadsNoBlobs: the index of a writable git mount's .git
// carries the stat data the kernel reports, so git status through the
// kernel, without any fsmonitor, stats every file and reads none it did not
// change: the lower layer sees no open.
func TestGitStatusReadsNoBlobs(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	for i := range 120 {
		p := filepath.Join(dir, fmt.Sprintf("d%d/s%d/f%d.txt", i%4, i%3, i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
	testutil.GitInit(t, dir)
	testutil.GitCommitAt(t, dir, gitWhen, nil, "many")

	g, err := gitfs.Open(ctx, gitfs.Options{Src: dir, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	var mu sync.Mutex
	var opened []string
	lower := mounts.Watch(g, mounts.Watcher{Done: func(_ context.Context, c mounts.Call, _ error) {
		if c.Op == mounts.OpOpen {
			mu.Lock()
			opened = append(opened, c.Name)
			mu.Unlock()
		}
	}})
	ov, err := overlayfs.New(ctx, lower, memfs.New(memfs.Options{}), overlayfs.Options{
		LowerID: g.Commit(), OwnXattrs: []string{"user.git."}, Private: []string{".git"},
	})
	require.NoError(t, err)
	files, err := g.DotGit(ctx, gitfs.DotGitOptions{})
	require.NoError(t, err)
	files["config"] = []byte("[core]\n\tbare = false\n\tuntrackedCache = true\n")
	require.NoError(t, mounts.Mkdir(ctx, ov, ".git", 0o755))
	for _, name := range sortedKeys(files) {
		p := ".git/" + strings.TrimSuffix(name, "/")
		if strings.HasSuffix(name, "/") {
			require.NoError(t, mounts.Mkdir(ctx, ov, p, 0o755))
		} else {
			require.NoError(t, mounts.WriteFile(ctx, ov, p, files[name], 0o644))
		}
	}
	u, err := union.New(map[string]mounts.FS{"/repo": ov})
	require.NoError(t, err)
	mnt, _ := mountKernel(t, u)
	r := filepath.Join(mnt, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = r
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	reset := func() []string {
		mu.Lock()
		defer mu.Unlock()
		o := opened
		opened = nil
		return o
	}

	require.NoError(t, os.WriteFile(filepath.Join(r, "d0/s0/f0.txt"), []byte("changed\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r, "d1/new.txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(r, "d2/s2/f2.txt")))
	reset()
	for range 2 {
		assert.Equal(t, " M d0/s0/f0.txt\n D d2/s2/f2.txt\n?? d1/new.txt\n", git("status", "--porcelain"))
		assert.Empty(t, reset(), "git status opened untouched files of the commit")
	}
	// The count is real: a read of an untouched file shows.
	git("hash-object", "d3/s0/f3.txt")
	assert.Equal(t, []string{"d3/s0/f3.txt"}, reset())
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
