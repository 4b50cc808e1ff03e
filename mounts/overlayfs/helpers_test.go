package overlayfs_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

var bg = context.Background()

// lowerFS is what a read-only lower offers: the read side and xattrs.
type lowerFS interface {
	mounts.FS
	mounts.XattrFS
}

// frozen is a memory mount with its write verbs out of reach, so a test
// proves the overlay never writes to its lower.
type frozen struct{ lowerFS }

func (fz frozen) Describe() mounts.Description {
	return mounts.Description{Type: "memory", Source: "frozen", Immutable: true}
}

// spec builds a tree from compact specs: "d/" a directory, "l->t" a
// symlink to t, "f=content" a file, anything else a file whose content is
// its own name.
func build(t testing.TB, fsys mounts.FS, specs ...string) {
	t.Helper()
	for _, s := range specs {
		switch {
		case strings.HasSuffix(s, "/"):
			require.NoError(t, mounts.MkdirAll(bg, fsys, strings.TrimSuffix(s, "/"), 0o755), "mkdir %s", s)
		case strings.Contains(s, "->"):
			name, target, _ := strings.Cut(s, "->")
			require.NoError(t, mounts.Symlink(bg, fsys, target, name), "symlink %s", s)
		default:
			name, content, ok := strings.Cut(s, "=")
			if !ok {
				content = name
			}
			if dir, _ := mounts.Split(name); dir != "." {
				require.NoError(t, mounts.MkdirAll(bg, fsys, dir, 0o755))
			}
			require.NoError(t, mounts.WriteFile(bg, fsys, name, []byte(content), 0o644), "write %s", s)
		}
	}
}

// memLower is a frozen memory mount holding specs.
func memLower(t testing.TB, specs ...string) (mounts.FS, *memfs.FS) {
	t.Helper()
	m := memfs.New(memfs.Options{})
	build(t, m, specs...)
	return frozen{m}, m
}

// gitRepo commits files (name -> content; mode 0755 for names ending in
// ".sh") and symlinks (name -> target) into a new repository.
func gitRepo(t testing.TB, files, links map[string]string) string {
	t.Helper()
	return gitRepoAt(t, filepath.Join(t.TempDir(), "repo"), files, links)
}

// gitRepoAt is gitRepo in dir.
func gitRepoAt(t testing.TB, dir string, files, links map[string]string) string {
	t.Helper()
	testutil.GitInit(t, dir)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	for name, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	testutil.GitCommit(t, dir, nil, "fixture")
	return dir
}

// gitLower opens a git mount of repo's HEAD for the rest of the test.
func gitLower(t testing.TB, repo string) *gitfs.FS {
	t.Helper()
	g, err := gitfs.Open(bg, gitfs.Options{Src: repo, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	return g
}

// newOverlay is an overlay of a fresh memory upper over lower.
func newOverlay(t testing.TB, lower mounts.FS) (*overlayfs.FS, *memfs.FS) {
	t.Helper()
	upper := memfs.New(memfs.Options{})
	o, err := overlayfs.New(bg, lower, upper, overlayfs.Options{OwnXattrs: []string{"user.git."}})
	require.NoError(t, err)
	return o, upper
}

// upperNames lists every name the upper's tree holds, bookkeeping
// included: what a change left behind.
func upperNames(t testing.TB, upper mounts.FS) []string {
	t.Helper()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := upper.ReadDir(bg, dir)
		require.NoError(t, err)
		for _, e := range ents {
			name := mounts.Join(dir, e.Name)
			out = append(out, strings.TrimPrefix(name, "tree/"))
			if e.Type.IsDir() {
				walk(name)
			}
		}
	}
	walk("tree")
	return out
}

// tree records the whole merged tree: type, mode, size, content or target
// of every name, and its inode number when ino is set.
func tree(t testing.TB, fsys mounts.FS, ino bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(bg, dir)
		require.NoError(t, err, "readdir %s", dir)
		for _, e := range ents {
			name := mounts.Join(dir, e.Name)
			a, err := fsys.Stat(bg, name)
			require.NoError(t, err, "stat %s", name)
			s := fmt.Sprintf("%v nlink=%d", a.Mode, a.Nlink)
			if ino {
				s += fmt.Sprintf(" ino=%#x", a.Ino)
			}
			switch {
			case a.Mode.IsRegular():
				data, err := mounts.ReadFile(bg, fsys, name)
				require.NoError(t, err)
				s += " " + string(data)
			case a.Mode.Type() == fs.ModeSymlink:
				target, err := fsys.ReadLink(bg, name)
				require.NoError(t, err)
				s += " -> " + target
			}
			out[name] = s
			if a.IsDir() {
				walk(name)
			}
		}
	}
	walk(".")
	return out
}
