package integration

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
	"github.com/vfsmount/vfsmount/mounts/remotefs/peer"
	"github.com/vfsmount/vfsmount/union"
)

// remoteWorkspace is a union with a remote mount on /workspace, whose
// peer serves a host directory over an in-process pipe, mounted through
// the kernel.
func newRemoteWorkspace(t *testing.T) (mnt, src string) {
	t.Helper()
	src = t.TempDir()
	h, err := hostfs.Open(src, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.(*hostfs.FS).Close() })
	dial := func(context.Context) (io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		go func() {
			_ = peer.Serve(context.Background(), b, b, h, peer.Options{Dir: src, Build: "test"})
			b.Close()
		}()
		return a, nil
	}
	r, err := remotefs.Open(context.Background(), remotefs.Options{Dial: remotefs.StreamDialer(dial), Source: "test-peer", Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { r.(*remotefs.FS).Close() })
	u, err := union.New(map[string]mounts.FS{"/workspace": r, "/memory": memfs.New(memfs.Options{})})
	require.NoError(t, err)
	dir, srv := mountKernel(t, u)
	r.(*remotefs.FS).OnChange(srv.Invalidate) // as the workspace connects them
	return filepath.Join(dir, "workspace"), src
}

// TestRemoteMountsTestThroughKernel runs the conformance suite with system
// calls against a writable remote mount.
func TestRemoteMountsTestThroughKernel(t *testing.T) {
	mnt, _ := newRemoteWorkspace(t)
	mountstest.RunOS(t, mnt)
}

// TestRemotePOSIX runs go-fuse's POSIX checks on a remote mount: the
// host mount's exceptions, for the same reasons (the peer serves a host
// mount).
func TestRemotePOSIX(t *testing.T) {
	dir, _ := newRemoteWorkspace(t)
	runPOSIX(t, func(check string) string { return filepath.Join(dir, "posix-"+check) }, hostPOSIXUnsupported)
}

// TestRemoteDifferential is the host mount's differential on a remote
// mount through the kernel: the same outcomes as a plain directory, and
// the same tree behind the peer (once fsync of the directory waited for
// what the mount posted) and through the mount.
func TestRemoteDifferential(t *testing.T) {
	mnt, src := newRemoteWorkspace(t)
	hostDifferential(t, mnt, src)
}

// A stat(2) of a file that a program holds open reports the file as it
// is, not as it was when opened: go-fuse hands an open handle to the
// kernel face for a stat that names none, and a remote file keeps the
// attributes it was opened with (read whole; or to write, for a stat
// right after its open, with nothing done through it). Its link count,
// through another name, after a link and an unlink, with the file open
// to read and to write.
func TestRemoteKernelStatWhileOpen(t *testing.T) {
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY} {
		mnt, _ := newRemoteWorkspace(t)
		require.NoError(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("data\n"), 0o644))
		nlink := func(name string) uint64 {
			t.Helper()
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(filepath.Join(mnt, name), &st))
			return st.Nlink
		}
		require.NoError(t, os.Link(filepath.Join(mnt, "f"), filepath.Join(mnt, "g")))
		f, err := os.OpenFile(filepath.Join(mnt, "g"), flag, 0)
		require.NoError(t, err)
		if flag == os.O_RDONLY {
			b, err := io.ReadAll(f)
			require.NoError(t, err)
			require.Equal(t, "data\n", string(b))
		}
		require.NoError(t, os.Remove(filepath.Join(mnt, "f")))
		assert.Equal(t, uint64(1), nlink("g"), "open with flag %d: after the unlink", flag)
		require.NoError(t, os.Link(filepath.Join(mnt, "g"), filepath.Join(mnt, "h")))
		assert.Equal(t, uint64(2), nlink("g"), "open with flag %d: after another link", flag)
		require.NoError(t, f.Close())
	}
}
