package integration

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

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
	r, err := remotefs.Open(context.Background(), remotefs.Options{Dial: dial, Source: "test-peer", Timeout: 5 * time.Second})
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
// the same tree behind the peer and through the mount. Behind the peer at
// once, though the mount pipelines a handle's writes: close(2) waits for
// the peer's answers (FLUSH).
func TestRemoteDifferential(t *testing.T) {
	mnt, src := newRemoteWorkspace(t)
	hostDifferential(t, mnt, src)
}
