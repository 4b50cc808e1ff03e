package fusefs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ = (gofs.NodeReader)((*node)(nil))
	_ = (gofs.NodeFlusher)((*node)(nil))
	_ = (gofs.NodeFsyncer)((*node)(nil))
	_ = (gofs.NodeOnForgetter)((*node)(nil))
)

// Read serves READ. A request with a handle reads through it; one without
// comes from an immutable connection, where the kernel opens files itself
// (readImmutable).
func (n *node) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (res fuse.ReadResult, errno syscall.Errno) {
	if h := asHandle(f); h != nil {
		return h.Read(ctx, dest, off)
	}
	return n.readImmutable(ctx, dest, off)
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH again on
// this connection: writes reach the mount when they are made, so close(2)
// has nothing to push, and every close saves a round trip. Closing the
// mount's file (for the audit log's coalesced write line) happens at
// RELEASE.
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// Fsync syncs through the handle; a file opened without one (immutable
// content) has nothing to make durable.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h := asHandle(f); h != nil {
		return h.Fsync(ctx, flags)
	}
	return 0
}

// OnForget drops the node's cached reader when the kernel forgets it.
func (n *node) OnForget() {
	if n.conn.readers != nil {
		n.conn.readers.drop(n)
	}
}
