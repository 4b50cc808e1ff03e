package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestFigures measures the store on the workload: a writable git
// mount over a 13,000-file commit plus a memory mount; push after 100
// changed files (bytes sent against bytes changed), resume on an empty
// cache to the first listing, fork. It runs with VFSMOUNT_STORE_FIGURES=1
// (it makes a large repository), and checks that what a push sends stays
// within a small factor of what changed.
func TestFigures(t *testing.T) {
	if os.Getenv("VFSMOUNT_STORE_FIGURES") != "1" {
		t.Skip("set VFSMOUNT_STORE_FIGURES=1 to measure")
	}
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s, err := Open(ctx, Config{URL: "s3://" + testBucket + "/fig", Endpoint: srv.Endpoint, CacheDir: t.TempDir()})
	require.NoError(t, err)
	files := map[string]string{}
	for i := range 13000 {
		files[fmt.Sprintf("src/d%03d/f%05d.go", i%200, i)] = strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 40)
	}
	t0 := time.Now()
	src, _ := testutil.GitRepo(t, files)
	t.Logf("repository of %d files made in %v", len(files), time.Since(t0))
	t.Cleanup(func() {
		// git's automatic gc after a large commit runs in the
		// background: the temporary directory goes once it is done.
		for i := 0; i < 600; i++ {
			if _, err := os.Stat(filepath.Join(src, ".git", "gc.pid")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	_, repo := openGit(t, src)
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mounts.Mkdir(ctx, mem, "notes", 0o755))
	for i := range 200 {
		require.NoError(t, mounts.WriteFile(ctx, mem, fmt.Sprintf("notes/n%03d.md", i), []byte(strings.Repeat("memory note\n", 100)), 0o644))
	}
	ws := newCheckpoints(t, repo, mem)
	ss := acquire(t, s, "fig", "node-a")
	c1, err := ws.Create(ctx, "")
	require.NoError(t, err)
	t0 = time.Now()
	r1, err := ss.Push(ctx, ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	t.Logf("first push: %d chunks, sent %d bytes in %v", r1.Chunks, r1.Sent, time.Since(t0))

	var changed int64
	for i := range 100 {
		b := []byte(fmt.Sprintf("// edited %d\n", i) + strings.Repeat("x", 500))
		changed += int64(len(b))
		if i < 90 {
			require.NoError(t, mounts.WriteFile(ctx, repo, fmt.Sprintf("src/d%03d/f%05d.go", (i*7)%200, (i*7)%200+200*(i%50)), b, 0o644))
		} else {
			require.NoError(t, mounts.WriteFile(ctx, mem, fmt.Sprintf("notes/n%03d.md", i), b, 0o644))
		}
	}
	c2, err := ws.Create(ctx, "")
	require.NoError(t, err)
	t0 = time.Now()
	r2, err := ss.Push(ctx, ws, c2.ID, PushOptions{})
	require.NoError(t, err)
	took := time.Since(t0)
	t.Logf("FIGURE push after 100 changed files: %d bytes changed, %d bytes sent (%.2fx), %d chunks uploaded, %d files read, in %v",
		changed, r2.Sent, float64(r2.Sent)/float64(changed), r2.Uploaded, r2.Read, took)
	assert.Equal(t, changed, r2.Changed)
	assert.Less(t, r2.Sent, 2*changed, "sent stays near what changed (the compressed manifest is the rest)")

	// Resume on another client with an empty cache, to the first ls.
	s2, err := Open(ctx, Config{URL: "s3://" + testBucket + "/fig", Endpoint: srv.Endpoint, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t0 = time.Now()
	r, err := s2.Resume(ctx, "fig")
	require.NoError(t, err)
	up, err := r.LazyTree("/repo", memfs.Options{})
	require.NoError(t, err)
	m2, err := r.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	_, repo2 := openGitOver(t, src, up)
	ents, err := repo2.ReadDir(ctx, "src/d007")
	require.NoError(t, err)
	_, err = m2.ReadDir(ctx, "notes")
	require.NoError(t, err)
	t.Logf("FIGURE resume on an empty cache to the first ls: %v (lazy; %d entries)", time.Since(t0), len(ents))
	t0 = time.Now()
	require.NoError(t, up.LoadAll(ctx, 8))
	require.NoError(t, m2.LoadAll(ctx, 8))
	t.Logf("FIGURE then every content fetched in the background: %v", time.Since(t0))
	eager, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.NoError(t, err)
	_, err = eager.ReadDir(ctx, "notes")
	require.NoError(t, err)

	t0 = time.Now()
	_, err = s.Fork(ctx, "fig", "fig-fork")
	require.NoError(t, err)
	t.Logf("FIGURE fork: %v", time.Since(t0))
}
