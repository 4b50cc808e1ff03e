package agentbridge

import (
	"context"
	"io"
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
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/union"
)

// TestGitAndHostMounts runs the verbs over the real git and host mounts
// composed by the real union, with the mount table the CLI builds.
func TestGitAndHostMounts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repoDir, _ := testutil.GitRepo(t, map[string]string{"src/main.go": "package main\n\nfunc main() {}\n"})
	g, err := gitfs.Open(ctx, gitfs.Options{Src: repoDir, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })

	hostDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, ".gitignore"), []byte("build/\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(hostDir, "build"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "build/out.txt"), []byte("main\n"), 0o644))
	u, w := realWorkspace(t, map[string]mounts.FS{"/repo": g, "/host": openHost(t, hostDir)})
	src := u.Mounts()[0].Source
	if u.Mounts()[0].Prefix != "/repo" {
		src = u.Mounts()[1].Source
	}
	require.True(t, strings.HasPrefix(src, "git@"), src)

	assert.Equal(t, "host/  ["+hostSource(u)+", writable]\nrepo/  ["+src+", read-only]\n", ok(t, w, "ls", obj{"depth": 1, "path": "/"}))
	assert.Equal(t, "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n", ok(t, w, "read", obj{"path": "/repo/src/main.go"}))
	assert.Equal(t, "read /host/src/main.go: no such file or directory; did you mean /repo/src/main.go?", fail(t, w, "read", obj{"path": "src/main.go"}))
	assert.Equal(t, "write /repo/src/x.go: read-only mount /repo ("+src+"); writable: /host", fail(t, w, "write", obj{"path": "/repo/src/x.go", "fileText": "x"}))

	ok(t, w, "write", obj{"path": "/host/pkg/a.go", "fileText": "package pkg\n\nfunc main() {}\n"})
	data, err := os.ReadFile(filepath.Join(hostDir, "pkg/a.go"))
	require.NoError(t, err)
	assert.Equal(t, "package pkg\n\nfunc main() {}\n", string(data))
	ok(t, w, "edit", obj{"path": "/host/pkg/a.go", "oldText": "func main() {}", "newText": "func Main() {}"})
	assert.Equal(t, "/host/pkg/a.go\n/repo/src/main.go\n", ok(t, w, "grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "(?i)main"}), ".gitignore'd build/ skipped in the host mount")
	assert.Equal(t, "/host/build/out.txt\n", ok(t, w, "grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "^main$", "noIgnore": true}))
	ok(t, w, "edit", obj{"patchContent": "*** Begin Patch\n*** Update File: /host/pkg/a.go\n*** Move to: /host/pkg/b.go\n-func Main() {}\n+func B() {}\n*** End Patch"})
	assert.Equal(t, "/host/pkg/b.go\n", ok(t, w, "glob", obj{"pattern": "**/*.go", "path": "/host"}))
	assert.Equal(t, "deleted /host/pkg and 1 entry below it", ok(t, w, "delete", obj{"path": "/host/pkg", "recursive": true}))
	_, err = os.Stat(filepath.Join(hostDir, "pkg"))
	assert.True(t, os.IsNotExist(err))
}

func hostSource(u *union.Union) string {
	for _, m := range u.Mounts() {
		if m.Prefix == "/host" {
			return m.Source
		}
	}
	return ""
}

// openHost opens a writable host mount of dir until the test ends.
func openHost(t *testing.T, dir string) mounts.FS {
	t.Helper()
	h, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	if c, ok := h.(io.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return h
}

// realWorkspace composes table with the real union and serves it, with the
// mount table the union answers.
func realWorkspace(t *testing.T, table map[string]mounts.FS) (*union.Union, *Workspace) {
	t.Helper()
	u, err := union.New(table)
	require.NoError(t, err)
	w, err := New(u, Options{})
	require.NoError(t, err)
	return u, w
}
