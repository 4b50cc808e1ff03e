package fusetest_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestAbort: after Abort, the connection answers nothing any more, and the
// mount is left for an unmount to clear.
func TestAbort(t *testing.T) {
	fusetest.Need(t)
	if os.Geteuid() != 0 {
		t.Skip("aborting a connection needs root")
	}
	dir := t.TempDir()
	srv, err := fusefs.Mount(dir, memfs.New(memfs.Options{}), fusefs.Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if st, _ := fusefs.Probe(dir); st != fusefs.StateNone {
			assert.NoError(t, fusefs.ForceUnmount(dir))
		}
		srv.Wait()
	})
	require.NoError(t, os.WriteFile(dir+"/f", []byte("x"), 0o644))
	require.NoError(t, fusetest.Abort(dir))
	_, err = os.ReadDir(dir)
	assert.ErrorIs(t, err, syscall.ENOTCONN, "a request after the abort")
	st, err := fusefs.Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, fusefs.StateStale, st)
}
