package gitfs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// writeDotGit writes the files DotGit returns into dir/.git.
func writeDotGit(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	for name, data := range files {
		p := filepath.Join(dir, ".git", name)
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
}

func TestDotGit(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	gittest.InitRepo(t, src)
	gittest.WriteFile(t, src, "a.txt", "one\n", 0o644)
	gittest.WriteFile(t, src, "run.sh", "echo\n", 0o755)
	gittest.WriteFile(t, src, "d/e/deep.txt", "deep\n", 0o644)
	gittest.WriteFile(t, src, "d.txt", "sorts before d/ in the index\n", 0o644)
	gittest.WriteFile(t, src, "d/x.txt", "x\n", 0o644)
	require.NoError(t, os.Symlink("a.txt", filepath.Join(src, "link")))
	gittest.CommitAll(t, src, 1, "one")
	f := openFS(t, Options{Src: src})

	files, err := f.DotGit(ctx, DotGitOptions{Token: "tok:1"})
	require.NoError(t, err)
	co := t.TempDir()
	writeDotGit(t, co, files)
	gd := "--git-dir=" + filepath.Join(co, ".git")

	assert.Equal(t, f.Commit(), gittest.Git(t, co, gd, "rev-parse", "HEAD"), "HEAD is the commit, detached")
	assert.Equal(t, gittest.Git(t, src, "log", "--format=%H %s"), gittest.Git(t, co, gd, "log", "--format=%H %s"),
		"the history is the source's, through alternates")
	assert.Equal(t, gittest.Git(t, src, "ls-files", "-s"), gittest.Git(t, co, gd, "ls-files", "-s"),
		"the index is the commit's tree, in git's order")
	assert.Empty(t, gittest.Git(t, co, gd, "diff-index", "--cached", "HEAD"))
	assert.Equal(t, gittest.Git(t, src, "rev-parse", "HEAD^{tree}"), gittest.Git(t, co, gd, "write-tree"),
		"the cache-tree names the commit's tree")

	// Every entry carries the stat data the mount reports.
	debug := gittest.Git(t, co, gd, "ls-files", "--debug")
	for _, name := range []string{"a.txt", "run.sh", "d/e/deep.txt", "link"} {
		a, err := f.Stat(ctx, name)
		require.NoError(t, err)
		want := fmt.Sprintf("%s\n  ctime: %d:%d\n  mtime: %d:%d\n  dev: 0\tino: %d\n  uid: %d\tgid: %d\n  size: %d\t",
			name, a.Ctime.Unix(), a.Ctime.Nanosecond(), a.Mtime.Unix(), a.Mtime.Nanosecond(), uint32(a.Ino), a.Uid, a.Gid, a.Size)
		assert.Contains(t, debug, want)
	}
	idx := files["index"]
	assert.Contains(t, string(idx), "FSMN", "the fsmonitor extension")
	assert.Contains(t, string(idx), "tok:1\x00", "carries the token")

	files, err = f.DotGit(ctx, DotGitOptions{Branch: "work/topic"})
	require.NoError(t, err)
	co2 := t.TempDir()
	writeDotGit(t, co2, files)
	gd2 := "--git-dir=" + filepath.Join(co2, ".git")
	assert.Equal(t, "refs/heads/work/topic", gittest.Git(t, co2, gd2, "symbolic-ref", "HEAD"))
	assert.Equal(t, f.Commit(), gittest.Git(t, co2, gd2, "rev-parse", "work/topic"))
	assert.NotContains(t, string(files["index"]), "FSMN", "no token, no extension")

	for _, bad := range []string{"-x", "a..b", "a b", "x.lock", "/a", "a/", "@"} {
		_, err := f.DotGit(ctx, DotGitOptions{Branch: bad})
		assert.ErrorIs(t, err, ErrBadBranch, bad)
	}
	sub := openFS(t, Options{Src: src, Subdir: "d"})
	_, err = sub.DotGit(ctx, DotGitOptions{})
	assert.Error(t, err, "a subdir is not the commit's root")
}

// TestPutVarint: git's varint.c encodings (each continued group one less).
func TestPutVarint(t *testing.T) {
	for v, want := range map[uint64][]byte{0: {0}, 127: {127}, 128: {0x80, 0x00}, 255: {0x80, 0x7f}, 16511: {0xff, 0x7f}, 16512: {0x80, 0x80, 0x00}} {
		var b bytes.Buffer
		putVarint(&b, v)
		assert.Equal(t, want, b.Bytes(), "%d", v)
	}
}
