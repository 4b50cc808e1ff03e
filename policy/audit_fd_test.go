package policy

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
)

// TestAuditHidesFd: no file opened through the audit offers its host
// descriptor, for reading or for writing, so FUSE passthrough stays off for
// every open of an audited file (the kernel cannot mix the two per inode)
// and every write is counted.
func TestAuditHidesFd(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(src+"/f", []byte("host"), 0o644))
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	l, _ := newLog(t, AuditOptions{})
	fsys := Audit(h, l)

	for _, flag := range []int{os.O_RDONLY, os.O_RDWR, os.O_WRONLY | os.O_APPEND} {
		// The host mount's own file has a descriptor...
		raw, err := mounts.OpenFile(ctx, h, "f", flag, 0)
		require.NoError(t, err)
		_, rawFd := raw.(mounts.FDFile)
		require.True(t, rawFd, "%#o: hostfs file without a descriptor", flag)
		require.NoError(t, raw.Close())
		// ...the audited one does not.
		f, err := mounts.OpenFile(ctx, fsys, "f", flag, 0)
		require.NoError(t, err)
		_, hasFd := f.(mounts.FDFile)
		assert.False(t, hasFd, "%#o: audited file offers its descriptor", flag)
		_, writable := f.(mounts.WritableFile)
		assert.Equal(t, mounts.WantsWrite(flag), writable, "%#o: WritableFile", flag)
		buf := make([]byte, 4)
		if flag == os.O_RDONLY {
			_, err = f.ReadAt(buf, 0)
			require.NoError(t, err)
			assert.Equal(t, "host", string(buf))
		}
		require.NoError(t, f.Close())
	}
	f, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	_, hasFd := f.(mounts.FDFile)
	assert.False(t, hasFd, "Open: audited file offers its descriptor")
	require.NoError(t, f.Close())
}
