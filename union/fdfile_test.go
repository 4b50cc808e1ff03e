package union

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
)

// TestFileForwardsFd: a union file offers the host descriptor exactly when
// the mount's file has one, for reading and for writing, and stays (or
// does not become) a WritableFile as the open asked.
func TestFileForwardsFd(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(src+"/f", []byte("host"), 0o644))
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	m := newMem()
	u, err := New(map[string]mounts.FS{"/host": h, "/memory": m})
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, u, "memory/f", []byte("mem"), 0o644))

	for _, tc := range []struct {
		name     string
		flag     int
		wantFd   bool
		writable bool
	}{
		{"host/f", os.O_RDONLY, true, false},
		{"host/f", os.O_RDWR, true, true},
		{"host/f", os.O_WRONLY | os.O_APPEND, true, true},
		{"memory/f", os.O_RDONLY, false, false},
		{"memory/f", os.O_RDWR, false, true},
	} {
		f, err := mounts.OpenFile(ctx, u, tc.name, tc.flag, 0)
		require.NoError(t, err, tc.name)
		fdf, hasFd := f.(mounts.FDFile)
		_, writable := f.(mounts.WritableFile)
		assert.Equal(t, tc.wantFd, hasFd, "%s %#o: FDFile", tc.name, tc.flag)
		assert.Equal(t, tc.writable, writable, "%s %#o: WritableFile", tc.name, tc.flag)
		if hasFd {
			// The descriptor is the host file's.
			var st, want unix.Stat_t
			require.NoError(t, unix.Fstat(int(fdf.Fd()), &st))
			require.NoError(t, unix.Stat(src+"/f", &want))
			assert.Equal(t, want.Ino, st.Ino, "%s %#o: descriptor", tc.name, tc.flag)
		}
		require.NoError(t, f.Close())
	}
}
