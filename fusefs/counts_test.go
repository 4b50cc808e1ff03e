package fusefs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestRequestCounts: Options.Counts sees each request the kernel sends,
// by opcode: a stat of a missing name on a mount whose misses are not
// cached is one LOOKUP each, a write one WRITE.
func TestRequestCounts(t *testing.T) {
	counts := &RequestCounts{}
	m := describedFS{memfs.New(memfs.Options{}), mounts.Description{Type: "host", External: true}}
	_, dir := mountFS(t, m, Options{Counts: counts})
	before := counts.Snapshot()
	for range 5 {
		_, err := os.Stat(filepath.Join(dir, "missing"))
		require.ErrorIs(t, err, syscall.ENOENT)
	}
	// (A GETATTR of the directory may come too: its attributes time out
	// after a second.)
	assert.Equal(t, uint64(5), counts.Snapshot().Sub(before)[OpLookup])

	f, err := os.Create(filepath.Join(dir, "f"))
	require.NoError(t, err)
	before = counts.Snapshot()
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), counts.Snapshot().Sub(before)[OpWrite])
	require.NoError(t, f.Close())

	r := Requests{OpForget: 4, OpLookup: 1, OpGetattr: 2}
	assert.Equal(t, uint64(3), r.Waited(), "FORGET is not waited for")
	assert.Equal(t, "LOOKUP=1 FORGET=4 GETATTR=2", r.String(), "in opcode order")
	assert.Equal(t, Requests{OpLookup: 1}, r.Sub(Requests{OpForget: 4, OpGetattr: 2}))
}
