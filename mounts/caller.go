package mounts

import (
	"context"
	"os"
)

// Caller identifies who asked for an operation, for owners of new files and
// for the audit log. The kernel face fills it from the FUSE request; the
// tool face from the process and the tool call id.
type Caller struct {
	Uid, Gid uint32
	// Pid of the calling process (kernel face), 0 otherwise.
	Pid uint32
	// Face is "kernel" or "tool".
	Face string
	// CallID is the tool call id on the tool face.
	CallID string
}

type callerKey struct{}

// WithCaller returns a context carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller carried by ctx, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// MayCreateDevice reports whether the caller in ctx may create a device
// node, as mknod(2) allows only with CAP_MKNOD. A caller that came through
// the kernel was checked there already (the VFS refuses before it asks a
// FUSE server, and FUSE does not pass capabilities on); any other caller
// must be root, and with no caller at all the process itself must be.
func MayCreateDevice(ctx context.Context) bool {
	c, ok := CallerFrom(ctx)
	switch {
	case !ok:
		return os.Geteuid() == 0
	case c.Face == "kernel":
		return true
	default:
		return c.Uid == 0
	}
}

type pagesKeptKey struct{}

// WithPagesKept returns a context saying that the caller keeps what it
// reads from the files it opens with it, and for longer than it keeps the
// files open: the kernel face on a connection whose pages survive close
// (FOPEN_KEEP_CACHE, and every immutable connection). A mount that caches
// content for its readers (a git mount's decoded blobs) need not keep that
// content once such a file closes; the next reader is the kernel's page
// cache. It is a hint only: a mount may keep the content anyway.
func WithPagesKept(ctx context.Context) context.Context {
	return context.WithValue(ctx, pagesKeptKey{}, true)
}

// PagesKept reports whether ctx says the caller keeps the pages it reads
// ([WithPagesKept]).
func PagesKept(ctx context.Context) bool {
	kept, _ := ctx.Value(pagesKeptKey{}).(bool)
	return kept
}

type openedInCaseKey struct{}

// WithOpenedInCase marks ctx as that of an open made in case the file is
// read later, and most likely never read: the kernel face keeping a file
// that loses its last name readable for a program that may hold it open.
// A mount that works at open (a git mount decodes the blob, and counts the
// open towards a scan) may put that off until the first read. A hint only.
func WithOpenedInCase(ctx context.Context) context.Context {
	return context.WithValue(ctx, openedInCaseKey{}, true)
}

// OpenedInCase reports whether ctx says the open is made in case the file
// is read ([WithOpenedInCase]).
func OpenedInCase(ctx context.Context) bool {
	v, _ := ctx.Value(openedInCaseKey{}).(bool)
	return v
}
