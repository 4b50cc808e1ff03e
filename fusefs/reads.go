package fusefs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ = (gofs.NodeReader)((*node)(nil))
	_ = (gofs.NodeWriter)((*node)(nil))
	_ = (gofs.NodeFlusher)((*node)(nil))
	_ = (gofs.NodeFsyncer)((*node)(nil))
	_ = (gofs.NodeOnForgetter)((*node)(nil))
)

// Read serves READ. A request with a handle reads through it; one without
// comes from an openless connection, where the kernel opens files itself
// (readNoHandle).
func (n *node) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (res fuse.ReadResult, errno syscall.Errno) {
	if h := asHandle(f); h != nil {
		return h.Read(ctx, dest, off)
	}
	return n.readNoHandle(ctx, dest, off)
}

// Write serves WRITE, as Read does READ.
func (n *node) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (written uint32, errno syscall.Errno) {
	if h := asHandle(f); h != nil {
		return h.Write(ctx, data, off)
	}
	if !n.conn.how.writesByName {
		return 0, syscall.EBADF
	}
	return n.writeNoHandle(ctx, data, off)
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH again on
// this connection: writes reach the mount when they are made (a remote
// mount's are ordered before whatever any reader asks next, see its
// write-behind), so close(2) has nothing to push, and every close saves a
// round trip. Closing the mount's file (for the audit log's coalesced write
// line) happens at RELEASE.
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// Fsync syncs through the handle, a directory by name, or a file without
// a handle on a copy-on-write connection (fsyncNoHandle); a file of
// immutable content has nothing to make durable.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h := asHandle(f); h != nil {
		return h.Fsync(ctx, flags)
	}
	if n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFDIR {
		// FSYNCDIR of a directory the kernel opened by itself (a
		// connection that answers OPENDIR with ENOSYS): as Fsyncdir.
		return (&dirHandle{n: n}).Fsyncdir(ctx, flags)
	}
	if n.conn.how.writesByName {
		return n.fsyncNoHandle(ctx)
	}
	return 0
}

// OnForget drops the node's cached file, and the one it was pinned with,
// when the kernel forgets it.
func (n *node) OnForget() {
	n.conn.readers.drop(n, false)
	n.unpin()
}
