package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/fusefs"
	"github.com/vfsmount/vfsmount/mounts"
)

// The two faces, on the tree [Workspace.stack] stacked.

// MountKernel serves the kernel face at mountpoint: [Workspace.FS] through
// fusefs, read-only when the stack says so (a dry run, or nothing that can
// change), and told of every change the tool face makes, so that the
// shell sees it at once. opts are the caller's otherwise. The caller
// unmounts the server before closing the workspace.
func (ws *Workspace) MountKernel(mountpoint string, opts fusefs.Options) (*fusefs.Server, error) {
	opts.ReadOnly = opts.ReadOnly || ws.kernel.readOnly
	if opts.Logger == nil {
		opts.Logger = ws.opts.Logger
	}
	srv, err := fusefs.Mount(mountpoint, ws.FS, opts)
	if err != nil {
		return nil, err
	}
	ws.NotifyKernel(srv.Invalidate)
	return srv, nil
}

// NotifyKernel sends every later change the tool face or a service (a
// restore, a reset) makes to invalidate, by name ("memory/notes.md"): what
// a kernel face mounted otherwise than by MountKernel connects, so that it
// drops its caches of them. Never call back into the kernel face from a
// FUSE handler with it: the notices come from the tool face's goroutines.
func (ws *Workspace) NotifyKernel(invalidate func(names ...string)) {
	ws.kernel.changed.connect(invalidate)
}

// ToolFS is the tree the tool face serves ([Workspace.stack]): FS frozen
// in a dry run, and reporting its changes to the kernel face.
func (ws *Workspace) ToolFS() mounts.FS { return ws.tools.fs }

// ToolHooks are what wraps every tool call (agentbridge.Options BeforeCall
// and AfterCall): approvals and automatic checkpoints before, the audit
// line after; nil when the workspace has none.
func (ws *Workspace) ToolHooks() (before func(context.Context, *agentbridge.CallInfo) error,
	after func(context.Context, *agentbridge.CallInfo, agentbridge.Result, time.Duration)) {
	return ws.tools.before, ws.tools.after
}

// KernelReadOnly reports whether the kernel face is served read-only.
func (ws *Workspace) KernelReadOnly() bool { return ws.kernel.readOnly }

// ToolFace builds the tool face: agentbridge over the stack's tree, with
// the workspace's dry run, limits, approvals, automatic checkpoints and
// audit lines, and the checkpoint tools when Options.Checkpoint.Tools
// offers them. opts are the caller's otherwise (the tools: list, the
// logger); a shell (opts.Shell, which needs the kernel face mounted) gets
// the host paths the writable git mounts' .git needs besides. A tools:
// list naming what the workspace cannot serve is an error (fail closed).
func (ws *Workspace) ToolFace(opts agentbridge.Options) (*agentbridge.Workspace, error) {
	opts.DryRun = ws.opts.DryRun
	if opts.Limits == (agentbridge.Limits{}) {
		opts.Limits = ws.opts.Limits
	}
	opts.BeforeCall, opts.AfterCall = ws.tools.before, ws.tools.after
	if ws.Checkpoints != nil && ws.opts.Checkpoint.Tools {
		opts.Checkpoints = ws.Checkpoints.Tools()
	}
	if opts.Shell != nil {
		sh := *opts.Shell
		sh.Binds = append(sh.Binds, ws.Export.shellBinds()...)
		sh.Remote = append(sh.Remote, ws.remoteShells()...)
		sh.RemoteHere = append(sh.RemoteHere, ws.remoteHere()...)
		opts.Shell = &sh
	}
	t, err := agentbridge.New(ws.tools.fs, opts)
	if err != nil {
		return nil, fmt.Errorf("tool face: %w", err)
	}
	return t, nil
}

// remoteShells are the mounts whose commands run on their own machine
// (mounts.CommandFS: a remote mount). None when path rules exist: a
// command run there would change the files without passing the rules,
// so commands then run here, and reach those files through the kernel
// face, where the rules bind.
func (ws *Workspace) remoteShells() []agentbridge.RemoteShell {
	if !ws.opts.Rules.Empty() || ws.opts.DryRun {
		return nil
	}
	var out []agentbridge.RemoteShell
	for _, m := range ws.opts.Mounts {
		if r, ok := m.FS.(mounts.CommandFS); ok {
			rs := agentbridge.RemoteShell{Prefix: m.Prefix, Source: mounts.Describe(m.FS).Source, Runner: r}
			if s, ok := m.FS.(interface{ ShowsWorkspace() bool }); ok {
				rs.Rest = s.ShowsWorkspace()
			}
			if n, ok := m.FS.(interface{ BriefNote() string }); ok {
				rs.Note = n.BriefNote()
			}
			out = append(out, rs)
		}
	}
	return out
}

// remoteHere lists the workspace paths of the mounts on another machine
// whose commands run here instead, because path rules exist (see
// remoteShells): what the brief says.
func (ws *Workspace) remoteHere() []string {
	if ws.opts.Rules.Empty() {
		return nil
	}
	var out []string
	for _, m := range ws.opts.Mounts {
		if _, ok := m.FS.(mounts.CommandFS); ok {
			out = append(out, m.Prefix)
		}
	}
	return out
}
