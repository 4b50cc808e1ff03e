// Package workspace is an agent's workspace as a library: mounts composed
// into one namespace (package union), bound by one policy (package policy:
// path rules, audit, approvals, dry run), and served by two faces from
// that one tree — the kernel face (package fusefs) and the tool face
// (package agentbridge) — with the services that work on it: checkpoints
// of every writable layer, the export of writable git mounts back to git,
// git's fsmonitor hook, and the control socket the CLI's commands reach a
// running workspace through.
//
//	ws, _ := workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{
//		{Prefix: "/repo", FS: repo},   // a workspace.NewWritableGit, say
//		{Prefix: "/memory", FS: memfs.New(memfs.Options{})},
//	}})
//	defer ws.Close()
//	tools, _ := ws.ToolFace(agentbridge.Options{})        // no kernel needed
//	info, _ := ws.Checkpoints.Create(ctx, "before")
//	... tools.Call(ctx, "cursor", "write", args) ...
//	patch, _ := ws.Export.Diff(ctx, jsonrpc.DiffParams{})
//	_, _ = ws.Checkpoints.Restore(ctx, info.ID, nil)
//
// # Who the policy binds
//
// The stack ([Workspace.stack]) is the one place that says which layer
// wraps which. The faces see the tree only through the path rules and the
// audit log. The services reach the mounts themselves (a checkpoint
// freezes a memory tree, an export writes git objects), so they apply the
// policy themselves, by who asks: the agent's checkpoint tools are bound
// by the path rules as every other tool; the operator's commands (the
// CLI's, and the JSON-RPC methods workspace.* and checkpoint.*) are bound
// by none, and every change either makes is an audit line.
//
// # Capabilities, not types
//
// The services find what they work on by capability ([mounts.Freezable],
// [mounts.Exportable]), never by a mount's concrete type: a Go program
// that brings a mount of its own with those capabilities gets checkpoints
// and exports of it.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/policy"
	"github.com/vfsmount/vfsmount/union"
)

// Mount is one mount of a workspace.
type Mount struct {
	// Prefix is the mount point, an absolute workspace path ("/repo").
	Prefix string
	// FS is the mount.
	FS mounts.FS
	// Backing says what holds the mount's data beyond its description
	// ("persist file mem.db", "directory ./out"), for the checkpoints'
	// manifests; "" when nothing does.
	Backing string
}

// Options configure a workspace.
type Options struct {
	// Mounts are composed by prefix (package union).
	Mounts []Mount
	// Rules are the path rules (nil: none).
	Rules *policy.RuleSet
	// Audit logs every change and tool call (nil: no log). The caller
	// opened it; Close closes it, after everything else.
	Audit *policy.AuditLog
	// Approver asks before the tool face's effectful calls (nil: none).
	Approver *policy.Approver
	// DryRun: the tool face reports instead of changing; the kernel face
	// is read-only.
	DryRun bool
	// Limits bound what one tool call may do (zero: the defaults).
	Limits agentbridge.Limits
	// Checkpoint configures the checkpoints.
	Checkpoint CheckpointOptions
	// Logger receives the services' logs (nil: silent).
	Logger *slog.Logger
}

// CheckpointOptions configure a workspace's checkpoints.
type CheckpointOptions struct {
	// Keep bounds their number: the oldest past it are dropped (0: all
	// are kept).
	Keep int
	// Before are the canonical verbs (write, edit, delete, shell) before
	// each call of which the tool face takes a checkpoint.
	Before []string
	// Tools offers the checkpoint_* tools.
	Tools bool
}

// ErrNoWritable is wrapped by [Open] when checkpoint tools or automatic
// checkpoints are asked of a workspace with nothing they could freeze.
var ErrNoWritable = checkpoint.ErrNoWritable

// Workspace is an open workspace.
type Workspace struct {
	// Union composes the mounts.
	Union *union.Union
	// FS is the tree below both faces: the union wrapped in the policy
	// (path rules, then audit), as [Workspace.stack] stacked it.
	FS mounts.FS
	// Checkpoints takes and restores checkpoints of every writable layer
	// (nil: the workspace has none a checkpoint can freeze).
	Checkpoints *Checkpoints
	// Export hands the writable git mounts' changes back to git (nil: the
	// workspace has none).
	Export *Export

	opts   Options
	kernel kernelFace
	tools  toolFace
	closed bool
	onEnd  []func() error
}

// Open composes opts.Mounts and stacks the policy and the faces' layers on
// them. A table the union refuses (a prefix under a file of its parent,
// say) is an error naming it; so is a checkpoint option that cannot be
// honoured. The mounts are the caller's: Close closes only what [OnClose]
// was given, and the audit log.
func Open(ctx context.Context, opts Options) (_ *Workspace, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ws := &Workspace{opts: opts}
	table := make(map[string]mounts.FS, len(opts.Mounts))
	backing := map[string]string{}
	for _, m := range opts.Mounts {
		if _, dup := table[m.Prefix]; dup {
			return nil, fmt.Errorf("mount table: %s is mounted twice", m.Prefix)
		}
		table[m.Prefix] = m.FS
		backing[m.Prefix] = m.Backing
	}
	if ws.Union, err = union.New(table); err != nil {
		return nil, fmt.Errorf("mount table: %w", err)
	}
	if ws.Checkpoints, err = newCheckpoints(table, backing, opts.Checkpoint.Keep, opts.Rules, opts.Audit, ws.kernel.changed.notify); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if ws.Checkpoints == nil && (len(opts.Checkpoint.Before) > 0 || opts.Checkpoint.Tools) {
		return nil, fmt.Errorf("checkpoint: %w", ErrNoWritable)
	}
	ws.Export = newExport(table, opts.Audit, ws.kernel.changed.notify)
	for _, m := range opts.Mounts {
		if n, ok := m.FS.(mounts.ChangeNotifier); ok {
			n.OnChange(ws.relay(m.Prefix))
		}
	}
	ws.stack()
	for _, m := range opts.Mounts {
		if s, ok := m.FS.(mounts.WorkspaceShower); ok {
			s.ShowWorkspace(ws.FS, m.Prefix)
		}
	}
	return ws, nil
}

// relay passes the changes a mount at prefix hears of to the kernel face,
// as workspace names.
func (ws *Workspace) relay(prefix string) func(names ...string) {
	base := mounts.NameOf(prefix)
	return func(names ...string) {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = mounts.Join(base, n)
		}
		ws.kernel.changed.notify(out...)
	}
}

// OnClose has Close call fn, before the functions given earlier: what a
// mount holds open (a file, a server) goes once the faces are down.
func (ws *Workspace) OnClose(fn func() error) { ws.onEnd = append(ws.onEnd, fn) }

// Close releases what OnClose was given, in reverse order, and then the
// audit log. Call it after the faces are down.
func (ws *Workspace) Close() error {
	if ws.closed {
		return nil
	}
	ws.closed = true
	var errs []error
	for i := len(ws.onEnd) - 1; i >= 0; i-- {
		errs = append(errs, ws.onEnd[i]())
	}
	if ws.opts.Audit != nil {
		errs = append(errs, ws.opts.Audit.Close())
	}
	return errors.Join(errs...)
}

// Mounts is the mount table as FS answers it: the union's, a mount under a
// read_only prefix shown read-only by the path rules.
func (ws *Workspace) Mounts() []mounts.MountInfo { return mounts.Mounts(ws.FS) }

// Mount returns the mount at prefix itself, below the policy: the
// caller's own, as it gave it to Open.
func (ws *Workspace) Mount(prefix string) (mounts.FS, bool) {
	for _, m := range ws.opts.Mounts {
		if m.Prefix == prefix {
			return m.FS, true
		}
	}
	return nil, false
}

// Changed tells the kernel face that names ("memory/notes.md") changed
// behind its back (through a mount itself, below the faces), so that it
// drops its caches of them.
func (ws *Workspace) Changed(names ...string) { ws.kernel.changed.notify(names...) }

// DryRun reports whether the workspace is in a dry run.
func (ws *Workspace) DryRun() bool { return ws.opts.DryRun }

// Options returns the options the workspace was opened with.
func (ws *Workspace) Options() Options { return ws.opts }
