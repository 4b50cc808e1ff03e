package integration

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// workspace is a mounted union of three memory mounts, one nested in
// another: /memory, /agent and /agent/notes.
type workspace struct {
	dir   string // the mount point
	union *union.Union
	// lib is the library API as the tool face uses it: the union,
	// observed so that every change invalidates the kernel's caches.
	lib mounts.FS
	srv *fusefs.Server
}

// path returns the host path of a workspace name ("memory/x").
func (w *workspace) path(name string) string { return filepath.Join(w.dir, filepath.FromSlash(name)) }

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	fusetest.Need(t)
	u, err := union.New(map[string]mounts.FS{
		"/memory":      memfs.New(memfs.Options{}),
		"/agent":       memfs.New(memfs.Options{}),
		"/agent/notes": memfs.New(memfs.Options{}),
	})
	require.NoError(t, err)
	dir := t.TempDir()
	// The kernel face gets the union itself; only the library API goes
	// through the observer (see "# Deadlocks" in package fusefs).
	srv, err := fusefs.Mount(dir, u, fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			if st, _ := fusefs.Probe(dir); st != fusefs.StateNone {
				assert.NoError(t, fusefs.ForceUnmount(dir))
			}
		}
	})
	return &workspace{dir: dir, union: u, lib: mounts.Observe(u, srv.Invalidate), srv: srv}
}

var bg = context.Background()
