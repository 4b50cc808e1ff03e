package fusefs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/union"
)

// A notified mount (a remote mount with its change stream) is served on a
// connection of its own where the kernel opens files and directories
// without asking: listings stay in the kernel until an invalidation drops
// them, one of the connection's root drops everything the kernel kept
// below it, and files are read and written by name.
func TestNotifiedConnection(t *testing.T) {
	ctx := context.Background()
	remote := memfs.New(memfs.Options{})
	for _, name := range []string{"d/a", "d/b", "d/sub/c"} {
		require.NoError(t, mounts.MkdirAll(ctx, remote, "d/sub", 0o755))
		require.NoError(t, mounts.WriteFile(ctx, remote, name, []byte(name), 0o644))
	}
	u, err := union.New(map[string]mounts.FS{
		"/workspace": describedFS{remote, mounts.Description{Type: "remote", Notified: true}},
		"/host":      describedFS{memfs.New(memfs.Options{}), mounts.Description{Type: "host", External: true}},
		"/memory":    memfs.New(memfs.Options{}),
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"workspace"}, NotifiedRoots(u))
	counts := &RequestCounts{}
	srv, dir := mountFS(t, u, Options{StackConnections: true, Counts: counts})
	require.Len(t, srv.subs, 1, "/workspace on a connection of its own")
	c := srv.subs[0].conn
	require.Equal(t, kindNotified, c.kind)
	require.True(t, c.how.openless && c.how.writesByName && c.how.changes)

	d := filepath.Join(dir, "workspace", "d")
	list := func() []string {
		t.Helper()
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	require.Equal(t, []string{"a", "b", "sub"}, list())
	before := counts.Snapshot()
	for range 3 {
		require.Equal(t, []string{"a", "b", "sub"}, list())
	}
	got := counts.Snapshot().Sub(before)
	assert.Zero(t, got.Waited(), "listings kept by the kernel, directories opened without asking: %v", got)

	// A change behind the kernel's back, told: the listing goes.
	require.NoError(t, mounts.WriteFile(ctx, remote, "d/new", nil, 0o644))
	assert.Equal(t, []string{"a", "b", "sub"}, list(), "kept until told")
	srv.Invalidate("workspace/d/new")
	assert.Equal(t, []string{"a", "b", "new", "sub"}, list())

	// Everything may have changed (the link came back): the root's
	// invalidation drops what the kernel kept below it too.
	_, err = os.Stat(filepath.Join(d, "sub", "c"))
	require.NoError(t, err)
	require.NoError(t, remote.Unlink(ctx, "d/sub/c"))
	require.NoError(t, mounts.WriteFile(ctx, remote, "d/sub/later", nil, 0o644))
	srv.Invalidate("workspace")
	_, err = os.Stat(filepath.Join(d, "sub", "c"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	ents, err := os.ReadDir(filepath.Join(d, "sub"))
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, "later", ents[0].Name())

	// Files are opened without asking: written, read back, and
	// written again, with no OPEN, FLUSH or RELEASE (the first OPEN
	// and FLUSH are answered ENOSYS, once).
	require.NoError(t, os.WriteFile(filepath.Join(d, "w"), []byte("written"), 0o644))
	b, err := os.ReadFile(filepath.Join(d, "w"))
	require.NoError(t, err)
	assert.Equal(t, "written", string(b))
	before = counts.Snapshot()
	for range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(d, "w"), []byte("again"), 0o644))
		b, err = os.ReadFile(filepath.Join(d, "w"))
		require.NoError(t, err)
		assert.Equal(t, "again", string(b))
	}
	got = counts.Snapshot().Sub(before)
	assert.Zero(t, got[OpOpen]+got[OpFlush]+got[OpRelease], "opened and closed without asking: %v", got)
	w, err := mounts.ReadFile(ctx, remote, "d/w")
	require.NoError(t, err)
	assert.Equal(t, "again", string(w))
}
