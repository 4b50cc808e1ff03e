package fusefs

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	srv, err := Mount(dir, memfs.New(memfs.Options{}), Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if st, _ := Probe(dir); st != StateNone {
			assert.NoError(t, ForceUnmount(dir))
		}
		srv.Wait()
	})
	require.NoError(t, os.WriteFile(dir+"/f", []byte("x"), 0o644))
	require.NoError(t, Abort(dir))
	_, err = os.ReadDir(dir)
	assert.ErrorIs(t, err, syscall.ENOTCONN, "a request after the abort")
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateStale, st)
}
