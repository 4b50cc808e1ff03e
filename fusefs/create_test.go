package fusefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyOnWriteCreateKeepsNoHandle: once the kernel knows that OPEN
// answers ENOSYS it sends no RELEASE, so a file created on a copy-on-write
// connection must not be held by a handle (it would stay open for the
// life of the node: a descriptor per file with a host upper). Its writes
// go by name, and a write-only creation is read back by name.
func TestCopyOnWriteCreateKeepsNoHandle(t *testing.T) {
	counts := &RequestCounts{}
	srv, dir, _ := cowWorkspaceOpts(t, map[string]string{"a": "alpha"}, Options{StackConnections: true, Counts: counts})
	repo := filepath.Join(dir, "repo")
	_, err := os.ReadFile(filepath.Join(repo, "a")) // the kernel learns OPEN is ENOSYS
	require.NoError(t, err)
	names := []string{"n0", "n1", "n2"}
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte("new "+name), 0o600))
	}
	f, err := os.OpenFile(filepath.Join(repo, "rw"), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o644)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("read-write"), 0)
	require.NoError(t, err)
	buf := make([]byte, 10)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "read-write", string(buf))
	require.NoError(t, f.Close())

	c := srv.subs[0].conn
	for _, name := range append(names, "rw") {
		ch := c.root.GetChild(name)
		require.NotNil(t, ch, name)
		n := ch.Operations().(*node)
		n.mu.Lock()
		open := len(n.open)
		n.mu.Unlock()
		assert.Zero(t, open, "%s holds no handle", name)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(repo, name))
		require.NoError(t, err)
		assert.Equal(t, "new "+name, string(b))
	}
	assert.Zero(t, counts.Snapshot()[OpRelease], "no RELEASE came, and none was needed")
}
