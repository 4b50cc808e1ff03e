package agentbridge

import (
	"context"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// unreadableDir refuses to list one directory, as a host directory
// without read permission does.
type unreadableDir struct {
	mounts.FS
	dir string
}

func (u unreadableDir) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if name == u.dir {
		return nil, mounts.PathErr("readdir", name, fs.ErrPermission)
	}
	return u.FS.ReadDir(ctx, name)
}

// TestWalkRules pins what the one walker does for each verb that lists
// recursively: ls shows .git and fails on a directory it cannot list;
// glob and grep leave .git out and skip such a directory, as ripgrep
// does; none follows a symlink into a directory.
func TestWalkRules(t *testing.T) {
	ctx := context.Background()
	var tick int64
	mem := memfs.New(memfs.Options{Now: func() time.Time { return time.Unix(1_700_000_000+atomic.AddInt64(&tick, 1), 0) }})
	// Created in this order, so glob's newest-first order is fixed.
	for _, name := range []string{"d/a.txt", "d/.git/HEAD", "d/locked/x", "d/sub/y.txt", "d/sub/z/w.md"} {
		dir, _ := mounts.Split(name)
		require.NoError(t, mounts.MkdirAll(ctx, mem, dir, 0o755))
		require.NoError(t, mounts.WriteFile(ctx, mem, name, []byte("needle\n"), 0o644))
	}
	require.NoError(t, mounts.Symlink(ctx, mem, "sub", "d/link"))
	w, err := New(&testUnion{m: map[string]mounts.FS{"m": unreadableDir{mem, "d/locked"}},
		table: []mounts.MountInfo{{Prefix: "/m", Description: mounts.Description{Type: "memory", Source: "memory"}, Writable: true}}},
		Options{})
	require.NoError(t, err)

	assert.Equal(t, ".git/\na.txt\nlink -> sub\nlocked/\nsub/\n", ok(t, w, "ls", obj{"depth": 1, "path": "/m/d"}))
	assert.Equal(t, ".git/\n.git/HEAD\na.txt\nlink -> sub\nsub/\nsub/y.txt\nsub/z/\n",
		ok(t, w, "ls", obj{"path": "/m/d", "depth": 2, "ignore": []string{"locked"}}), "ls lists .git and stops at its depth")
	assert.Equal(t, "ls /m/d: permission denied", fail(t, w, "ls", obj{"path": "/m/d", "depth": 2}), "ls does not hide what it cannot list")
	assert.Equal(t, ".git/\n.git/HEAD\na.txt\nlink -> sub\nlocked/  (not listed: permission denied)\nsub/\nsub/y.txt\nsub/z/\nsub/z/w.md\n",
		ok(t, w, "ls", obj{"path": "/m/d"}), "the tree says which directory it could not enter, and lists the rest")

	assert.Equal(t, "/m/d/link\n/m/d/sub/z/w.md\n/m/d/sub/y.txt\n/m/d/a.txt\n", ok(t, w, "glob", obj{"pattern": "**/*", "path": "/m/d"}))
	assert.Equal(t, "/m/d/a.txt\n/m/d/sub/y.txt\n/m/d/sub/z/w.md\n", ok(t, w, "grep", obj{"outputMode": "files_with_matches", "sort": "path", "sortAscending": true, "pattern": "needle", "path": "/m/d"}))
}
