package integration

import (
	"context"
	"github.com/hanwen/go-fuse/v2/posixtest"
	"os"
	"path/filepath"
	"sort"
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
	// The kernel face gets the union itself; only the library API goes
	// through the observer (see "# Deadlocks" in package fusefs).
	dir, srv := mountKernel(t, u)
	return &workspace{dir: dir, union: u, lib: mounts.Observe(u, srv.Invalidate), srv: srv}
}

// mountKernel mounts fsys through the kernel at a fresh directory for the
// rest of the test, and unmounts it at the end (forcing it if it is busy,
// which is an error of the test).
func mountKernel(t testing.TB, fsys mounts.FS) (string, *fusefs.Server) {
	t.Helper()
	return mountKernelWith(t, fsys, fusefs.Options{})
}

// mountKernelWith is mountKernel with mount options.
func mountKernelWith(t testing.TB, fsys mounts.FS, opts fusefs.Options) (string, *fusefs.Server) {
	t.Helper()
	fusetest.Need(t)
	dir := t.TempDir()
	srv, err := fusefs.Mount(dir, fsys, opts)
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
	return dir, srv
}

// runPOSIX runs go-fuse's POSIX checks, each in a fresh directory that
// dir names, skipping those that unsupported explains.
func runPOSIX(t *testing.T, dir func(check string) string, unsupported map[string]string) {
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if why, ok := unsupported[name]; ok {
				t.Skip(why)
			}
			d := dir(name)
			require.NoError(t, os.Mkdir(d, 0o755))
			posixtest.All[name](t, d)
		})
	}
}

var bg = context.Background()
