package workspace

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/policy"
)

// stack puts the two faces of the workspace on its union. It is the one
// place that says which layer wraps which, and so what binds whom; read it
// before changing the order of anything. A request of either face goes
// down its column and then through the shared part to the mount:
//
//	kernel face                         tool face
//	fusefs: read-only in a dry run,     agentbridge: approval before an
//	  or when nothing can change          effectful call, audit line after
//	  │                                 Observe: tell the kernel face
//	  │                                   which names changed
//	  │                                 Freeze (dry run): refuse changes
//	  └───────────────┬─────────────────┘
//	                Audit: one line per change, refused ones too
//	                Guard: the path rules
//	                union: the mounts
//
// Why this order, from the mounts up:
//
//   - Guard is the first layer over the union and both faces sit above
//     it, so a path rule binds the shell and every other program on the
//     mount exactly as it binds the tools, and neither face reaches a
//     mount around it.
//   - Audit sits above Guard so that refused attempts are logged too, and
//     below the point where the faces part so that every change is logged
//     once, whichever face made it, with that face's caller (a pid and
//     uid, or a tool call id).
//   - The kernel face serves that tree. It is mounted read-only in a dry
//     run, and when nothing in the workspace can change: the kernel then
//     refuses writes itself (read-only twice). Immutable mounts are served
//     on connections of their own (fusefs.Options.StackConnections: the kernel
//     face finds them in the mount table).
//   - In a dry run the tool face gets [policy.Freeze] of the tree: every
//     change is refused before it reaches Audit, while the capabilities
//     still say what the tools would do, so the dry-run tool list keeps its
//     write tools (which report instead of writing).
//   - [mounts.Observe] is the top of the tool face's tree: each change a
//     tool made is reported to the kernel face, which drops its caches of
//     those names, so the shell sees the change at once. The kernel face
//     has no such layer: the kernel knows of its own changes, and
//     invalidating from inside a FUSE handler would deadlock.
//   - Around whole tool calls, outermost: the approval command before an
//     effectful call and the audit line after every call
//     ([Workspace.toolHooks]). Only the tool face has calls to judge; a
//     kernel write cannot wait for a person, so approvals do not bind the
//     kernel face, and path rules are what bind it.
//
// The mount table travels up the same stack ([mounts.Mounts]): Guard shows
// a mount under a read_only prefix as read-only, so both faces describe
// the mounts as they can be used.
//
// Call stack once, with ws.Union and ws.opts set.
func (ws *Workspace) stack() {
	// Below both faces.
	var fsys mounts.FS = ws.Union
	if !ws.opts.Rules.Empty() {
		fsys = policy.Guard(fsys, ws.opts.Rules)
	}
	if ws.opts.Audit != nil {
		fsys = policy.Audit(fsys, ws.opts.Audit)
	}
	ws.FS = fsys

	// The kernel face.
	ws.kernel.readOnly = ws.opts.DryRun || !mounts.Writable(fsys)

	// The tool face.
	tools := fsys
	if ws.opts.DryRun {
		tools = policy.Freeze(tools)
	}
	ws.tools.fs = mounts.Observe(tools, ws.kernel.changed.notify)
	ws.tools.before, ws.tools.after = ws.toolHooks()
}

// kernelFace is how the kernel face serves [Workspace.FS], as
// [Workspace.stack] decided.
type kernelFace struct {
	// readOnly mounts it read-only (fusefs.Options.ReadOnly).
	readOnly bool
	// changed carries the tool face's change notices to the kernel face
	// once it is mounted.
	changed changeNotices
}

// toolFace is what the tool face serves, as [Workspace.stack] decided.
type toolFace struct {
	// fs is the tree agentbridge serves.
	fs mounts.FS
	// before and after wrap every call (agentbridge.Options).
	before func(context.Context, *agentbridge.CallInfo) error
	after  func(context.Context, *agentbridge.CallInfo, agentbridge.Result, time.Duration)
}

// changeNotices forwards the names the tool face changed to the kernel
// face. The stack is built before the kernel face is mounted (it serves the
// stack's tree), so the kernel face is connected afterwards; until then,
// and in a workspace that has no kernel face, there is no cache to drop and
// a notice goes nowhere.
type changeNotices struct {
	to atomic.Pointer[func(names ...string)]
}

// connect sends every later notice to invalidate.
func (c *changeNotices) connect(invalidate func(names ...string)) { c.to.Store(&invalidate) }

func (c *changeNotices) notify(names ...string) {
	if f := c.to.Load(); f != nil {
		(*f)(names...)
	}
}
