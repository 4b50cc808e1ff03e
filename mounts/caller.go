package mounts

import (
	"context"
	"os"
)

// Face is where a call into the tree comes from. Its values are the audit
// log's "face" field, so they never change.
type Face string

const (
	// FaceKernel is a program's system call, through package fusefs.
	FaceKernel Face = "kernel"
	// FaceTool is a tool call of the model, through package agentbridge.
	FaceTool Face = "tool"
	// FaceOperator is a command of the person running the workspace (the
	// CLI's diff, commit, reset and checkpoint commands, the workspace.*
	// and checkpoint.* control methods).
	FaceOperator Face = "operator"
	// FaceInternal is the workspace's own work; the audit log records a
	// call with no caller as this face.
	FaceInternal Face = "internal"
)

// Caller identifies who asked for an operation, for owners of new files and
// for the audit log. The kernel face fills it from the FUSE request; the
// tool face from the process and the tool call id.
//
// Who asks travels in the context ([WithCaller]), because every verb of
// every layer needs it and none changes it. How a file will be used is no
// such thing: it is an argument of the open that needs it
// ([OpenOptions]), so that each layer passes it on visibly.
type Caller struct {
	Uid, Gid uint32
	// Pid of the calling process (kernel face), 0 otherwise.
	Pid uint32
	// Face is where the call comes from.
	Face Face
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
	case c.Face == FaceKernel:
		return true
	default:
		return c.Uid == 0
	}
}
