package mounts

import "context"

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
