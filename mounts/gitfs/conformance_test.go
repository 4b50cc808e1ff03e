package gitfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// TestConformance runs the mountstest read side on a repository built for
// it. Its symlinks stay inside the tree: fstest.TestFS follows every link
// it finds (absolute and dangling ones are TestTreeIsFaithfulToGit's).
func TestConformance(t *testing.T) {
	files := map[string]string{
		"README.md":                    "# conformance\n",
		"empty":                        "",
		"a/b/c/deep.txt":               "deep\n",
		"a/sibling.txt":                "sibling\n",
		"dir with space/file name.txt": "spaces\n",
		"ünïcödé/naïve.txt":            "non-ASCII\n",
		"bin/run.sh":                   "#!/bin/sh\necho hi\n",
	}
	dir, _ := gittest.SmallRepo(t, files)
	require.NoError(t, os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755))
	require.NoError(t, os.Symlink("a/b/c/deep.txt", filepath.Join(dir, "to-deep")))
	require.NoError(t, os.Symlink("../README.md", filepath.Join(dir, "a/up")))
	require.NoError(t, os.Symlink("a/b", filepath.Join(dir, "to-dir")))
	when := gittest.Time.Add(1)
	gittest.GitAt(t, dir, when, nil, "add", "-A")
	gittest.GitAt(t, dir, when, nil, "update-index", "--add", "--cacheinfo", "160000,"+gittest.GitAt(t, dir, when, nil, "rev-parse", "HEAD")+",sub")
	gittest.GitAt(t, dir, when, nil, "commit", "-q", "-m", "conformance")

	cache := t.TempDir()
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		f, err := Open(context.Background(), Options{Src: dir, CacheDir: cache})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	},
		mountstest.Expect(files),
		mountstest.ExpectSymlinks(map[string]string{"to-deep": "a/b/c/deep.txt", "a/up": "../README.md", "to-dir": "a/b"}),
		mountstest.ExpectDirs("sub"),
		mountstest.Caps(mounts.CapXattr|mounts.CapStatFS|mounts.CapSearch),
	)
}
