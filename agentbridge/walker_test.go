package agentbridge

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// walkerFS is a read-only mount that walks its own files, visiting them
// concurrently and in reverse order, as a real accelerated mount may.
type walkerFS struct {
	readOnly
	walks atomic.Int32
}

var _ mounts.FileWalker = (*walkerFS)(nil)

func (f *walkerFS) WalkFiles(ctx context.Context, dir string, want func(string) bool, visit func(string, []byte) error) error {
	f.walks.Add(1)
	var names []string
	var walk func(d string) error
	walk = func(d string) error {
		ents, err := f.ReadDir(ctx, d)
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := mounts.Join(d, e.Name)
			switch {
			case e.Type.IsDir() && e.Name != ".git":
				if err := walk(n); err != nil {
					return err
				}
			case e.Type.IsRegular() && (want == nil || want(n)):
				names = append(names, n)
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for i := len(names) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(n string) {
			defer wg.Done()
			data, err := mounts.ReadFile(ctx, f, n)
			if err == nil {
				err = visit(n, data)
			}
			errs <- err
		}(names[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func TestGrepUsesFileWalker(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	for i := range 30 {
		name := fmt.Sprintf("d%d/f%02d.go", i%3, i)
		require.NoError(t, mounts.MkdirAll(ctx, mem, fmt.Sprintf("d%d", i%3), 0o755))
		require.NoError(t, mounts.WriteFile(ctx, mem, name, []byte(fmt.Sprintf("package p\n// needle %d\n", i)), 0o644))
	}
	require.NoError(t, mounts.WriteFile(ctx, mem, "a.txt", []byte("needle\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, mem, "d0.txt", []byte("needle\n"), 0o644))
	wfs := &walkerFS{readOnly: readOnly{mem}}
	u, err := union.New(map[string]mounts.FS{"/repo": wfs, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	infos := []MountInfo{{Prefix: "/repo", Type: "git", Source: "git@x"}, {Prefix: "/memory", Type: "memory", Source: "memory", Writable: true}}
	plain, err := New(u, Options{Mounts: infos})
	require.NoError(t, err)
	fast, err := New(u, Options{Mounts: infos, Resolve: u.Resolve})
	require.NoError(t, err)

	for _, args := range []obj{
		{"pattern": "needle", "headLimit": 0},
		{"pattern": "needle", "path": "/repo", "outputMode": "count", "headLimit": 0},
		{"pattern": "needle 1", "path": "/repo/d1", "outputMode": "content"},
		{"pattern": "needle", "path": "/repo", "glob": "d0/**"},
		{"pattern": "needle", "type": "go", "outputMode": "content", "context": 1, "headLimit": 0},
	} {
		before := wfs.walks.Load()
		want := ok(t, plain, "grep", args)
		require.Equal(t, before, wfs.walks.Load(), "without Resolve the mount is walked file by file")
		assert.Equal(t, want, ok(t, fast, "grep", args), "%v", args)
		assert.Greater(t, wfs.walks.Load(), before, "%v: the mount walked itself", args)
	}
	assert.Contains(t, ok(t, fast, "grep", obj{"pattern": "needle"}), "/repo/a.txt\n/repo/d0/f00.go\n", "files sorted by path component, as ripgrep")

	// A mount nested inside the walker's subtree makes the bridge walk
	// itself: the walker would see what the nested mount shadows.
	u2, err := union.New(map[string]mounts.FS{"/repo": wfs, "/repo/d1": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	nested, err := New(u2, Options{Resolve: u2.Resolve, Mounts: []MountInfo{{Prefix: "/repo", Type: "git"}, {Prefix: "/repo/d1", Type: "memory", Writable: true}}})
	require.NoError(t, err)
	before := wfs.walks.Load()
	got := ok(t, nested, "grep", obj{"pattern": "needle", "path": "/repo", "headLimit": 0})
	assert.NotContains(t, got, "/repo/d1/")
	assert.Equal(t, before, wfs.walks.Load())
}
