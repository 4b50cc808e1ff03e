package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/policy"
)

// Checkpoints serves the checkpoints of a workspace: every memory mount
// and every writable git mount's memory upper, frozen at once by package
// checkpoint, which works on the mounts themselves, below the policy
// decorators. So the policy is applied here, by who asks:
//
//   - The checkpoint tools (checkpointTools) are the agent's, bound by the
//     path rules as every other tool: a diff withholds the content of a
//     name the rules deny reading, a restore leaves a name they deny
//     changing as it is; both say which, and why.
//   - vfsmount checkpoint and the JSON-RPC checkpoint.* methods
//     (jsonrpc.Checkpointer) are the operator's, the person running the
//     workspace: no path rule binds them.
//
// Every name a restore changes, or refuses to, is a change line of the
// audit log, with the tool call of the agent's or the face "operator". A
// restore tells the kernel face which names changed, so the shell sees
// the restored content at once.
type Checkpoints struct {
	ws *checkpoint.Workspace
	// rules bind the checkpoint tools (nil: none); audit logs every
	// change (nil: no log).
	rules *policy.RuleSet
	audit *policy.AuditLog
	// store is the object store checkpoints are pushed to (nil: none;
	// store.go).
	store *storeSync
	// notify tells the kernel face of names changed below it.
	notify func(names ...string)
}

var _ jsonrpc.Checkpointer = (*Checkpoints)(nil)

// newCheckpoints builds the checkpoints of the union table; nil when no
// mount has a layer to freeze. keep bounds their number (0: no bound).
// backing says what backs each mount beyond its description, by prefix
// (a host mount's directory, a persist file).
func newCheckpoints(table map[string]mounts.FS, backing map[string]string, keep int, rules *policy.RuleSet, audit *policy.AuditLog, notify func(names ...string)) (*Checkpoints, error) {
	c := &Checkpoints{rules: rules, audit: audit, notify: notify}
	var ms []checkpoint.Mount
	for prefix, fsys := range table {
		d := mounts.Describe(fsys)
		m := checkpoint.Mount{Prefix: prefix, Type: d.Type, Source: d.Source}
		if b := backing[prefix]; b != "" {
			m.Source += " (" + b + ")"
		}
		if g, ok := fsys.(interface{ Commit() string }); ok {
			m.Commit = g.Commit()
		}
		// By capability, never by type: what freezes, what exports.
		if e, ok := mounts.Exportable(fsys); ok {
			m.Export, m.Commit = e, e.BaseCommit()
		}
		if z, ok := mounts.Freezable(fsys); ok {
			m.Tree = z
		} else {
			m.Immutable = !mounts.Writable(fsys)
		}
		ms = append(ms, m)
	}
	ws, err := checkpoint.New(ms, checkpoint.Options{Keep: keep})
	if errors.Is(err, checkpoint.ErrNoWritable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ws.OnRestore(func(paths []string) {
		names := make([]string, len(paths))
		for i, p := range paths {
			names[i] = mounts.NameOf(p)
		}
		notify(names...)
	})
	c.ws = ws
	return c, nil
}

// rpcErr marks the errors of bad input for the JSON-RPC answer.
func rpcErr(err error) error {
	if errors.Is(err, checkpoint.ErrUnknown) || errors.Is(err, checkpoint.ErrBadPath) {
		return fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	return err
}

func infoOf(c checkpoint.Info) jsonrpc.CheckpointInfo {
	out := jsonrpc.CheckpointInfo{ID: c.ID, Name: c.Name, Time: c.Time, Bytes: c.Bytes, Inodes: c.Inodes}
	for _, e := range c.Manifest {
		out.Manifest = append(out.Manifest, jsonrpc.CheckpointMount{Prefix: e.Prefix, Type: e.Type, Source: e.Source, Commit: e.Commit, Coverage: string(e.Coverage)})
	}
	return out
}

// auditRestore logs a change line for every name r changed and every name
// it refused.
func (c *Checkpoints) auditRestore(ctx context.Context, r checkpoint.RestoreResult) {
	if c.audit == nil {
		return
	}
	for _, p := range r.Changed {
		c.audit.Change(ctx, "restore", p, nil)
	}
	for _, ref := range r.Refused {
		c.audit.Change(ctx, "restore", ref.Path, ref.Err)
	}
}

// filters are the path rules as the checkpoint tools' filters: nil for
// a kind of rule the workspace has none of, so that a diff or a restore
// pays for no check that cannot refuse.
func (c *Checkpoints) filters() (read, write checkpoint.Filter) {
	if c.rules.DeniesReads() {
		read = c.rules.CanRead
	}
	if c.rules.DeniesWrites() {
		write = c.rules.CanWrite
	}
	return read, write
}

// asOperator marks ctx as the operator's, for the audit log.
func asOperator(ctx context.Context) context.Context {
	if _, ok := mounts.CallerFrom(ctx); ok {
		return ctx
	}
	return mounts.WithCaller(ctx, mounts.Caller{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Face: mounts.FaceOperator})
}

func (c *Checkpoints) CheckpointCreate(ctx context.Context, p jsonrpc.CheckpointCreateParams) (jsonrpc.CheckpointInfo, error) {
	info, err := c.ws.Create(ctx, p.Name)
	if err != nil {
		return jsonrpc.CheckpointInfo{}, err
	}
	return infoOf(info), nil
}

func (c *Checkpoints) CheckpointList(ctx context.Context) (jsonrpc.CheckpointListResult, error) {
	res := jsonrpc.CheckpointListResult{Checkpoints: []jsonrpc.CheckpointInfo{}}
	for _, i := range c.ws.List() {
		res.Checkpoints = append(res.Checkpoints, infoOf(i))
	}
	return res, nil
}

func (c *Checkpoints) CheckpointRestore(ctx context.Context, p jsonrpc.CheckpointRestoreParams) (jsonrpc.CheckpointRestoreResult, error) {
	if p.ID == "" {
		return jsonrpc.CheckpointRestoreResult{}, fmt.Errorf("%w: a checkpoint id is required", jsonrpc.ErrInvalidParams)
	}
	r, err := c.Restore(ctx, p.ID, p.Paths...)
	if err != nil {
		return jsonrpc.CheckpointRestoreResult{}, rpcErr(err)
	}
	return jsonrpc.CheckpointRestoreResult{Restored: r.Restored, NotCovered: r.NotCovered, Changed: r.Changed}, nil
}

func (c *Checkpoints) CheckpointDelete(ctx context.Context, p jsonrpc.CheckpointDeleteParams) (jsonrpc.CheckpointDeleteResult, error) {
	if p.ID == "" {
		return jsonrpc.CheckpointDeleteResult{}, fmt.Errorf("%w: a checkpoint id is required", jsonrpc.ErrInvalidParams)
	}
	if err := c.ws.Delete(ctx, p.ID); err != nil {
		return jsonrpc.CheckpointDeleteResult{}, rpcErr(err)
	}
	return jsonrpc.CheckpointDeleteResult{Deleted: p.ID}, nil
}

// CheckpointDiff is the git diff from one checkpoint to another, or to
// now. A writable git mount's is the export's: both states written as git
// trees over the pinned commit and diffed by git (names are the
// repository's). A memory mount's is git's too, over trees written into a
// scratch repository (names under the mount's prefix: memory/notes.md).
func (c *Checkpoints) CheckpointDiff(ctx context.Context, p jsonrpc.CheckpointDiffParams) (jsonrpc.DiffResult, error) {
	format, err := gitfs.ParseDiffFormat(p.Format)
	if err != nil {
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: %v", jsonrpc.ErrInvalidParams, err)
	}
	if p.From == "" {
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: a checkpoint to diff from is required", jsonrpc.ErrInvalidParams)
	}
	text, err := c.ws.Diff(ctx, p.From, p.To, format, p.Paths...)
	return jsonrpc.DiffResult{Text: text}, rpcErr(err)
}

// Tools is the checkpoint tool family's view of the checkpoints
// (agentbridge.Checkpointer): bound by the path rules.
func (c *Checkpoints) Tools() agentbridge.Checkpointer { return checkpointTools{c} }

// Create takes a checkpoint of every writable layer at once, named name
// (free text, optional): the operator's.
func (c *Checkpoints) Create(ctx context.Context, name string) (checkpoint.Info, error) {
	return c.ws.Create(ctx, name)
}

// List lists the checkpoints, oldest first.
func (c *Checkpoints) List() []checkpoint.Info { return c.ws.List() }

// Restore brings the workspace (paths of it: none is all) back to
// checkpoint id: the operator's, bound by no path rule, audited.
func (c *Checkpoints) Restore(ctx context.Context, id string, paths ...string) (checkpoint.RestoreResult, error) {
	ctx = asOperator(ctx)
	r, err := c.ws.Restore(ctx, id, paths)
	c.auditRestore(ctx, r)
	return r, err
}

// Diff is the git diff from checkpoint from to checkpoint to ("" is now):
// the operator's, every name shown.
func (c *Checkpoints) Diff(ctx context.Context, from, to string, format gitfs.DiffFormat, paths ...string) (string, error) {
	return c.ws.Diff(ctx, from, to, format, paths...)
}

// Delete drops checkpoint id.
func (c *Checkpoints) Delete(ctx context.Context, id string) error { return c.ws.Delete(ctx, id) }

// HumanBytes prints a size as du -h does.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%c", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkpointTools adapts the checkpoints to the checkpoint tool family
// (agentbridge.Checkpointer): the same operations, answered in text.
type checkpointTools struct{ c *Checkpoints }

var _ agentbridge.Checkpointer = checkpointTools{}

func (t checkpointTools) Create(ctx context.Context, name string) (string, error) {
	info, err := t.c.ws.Create(ctx, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint %s taken (%s of changes since the previous one).", info.ID, HumanBytes(info.Bytes))
	for _, e := range info.Manifest {
		if e.Coverage == checkpoint.NotCovered {
			fmt.Fprintf(&b, "\n%s is a host directory: it is not in the checkpoint, and a restore leaves it as it is.", e.Prefix)
		}
	}
	return b.String(), nil
}

func (t checkpointTools) List(ctx context.Context) (string, error) {
	list := t.c.ws.List()
	if len(list) == 0 {
		return "no checkpoints", nil
	}
	var b strings.Builder
	for _, c := range list {
		fmt.Fprintf(&b, "%s  %s  %s", c.ID, c.Time.Format(time.RFC3339), HumanBytes(c.Bytes))
		if c.Name != "" {
			fmt.Fprintf(&b, "  %s", c.Name)
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Diff is the checkpoint diff under the path rules: a changed name the
// rules deny reading is named, never shown.
func (t checkpointTools) Diff(ctx context.Context, from, to string, paths []string) (string, error) {
	read, _ := t.c.filters()
	text, withheld, err := t.c.ws.DiffFiltered(ctx, from, to, gitfs.Patch, read, paths...)
	if err != nil {
		return "", toolErr(rpcErr(err))
	}
	if text == "" && len(withheld) == 0 {
		return "no changes", nil
	}
	var b strings.Builder
	b.WriteString(text)
	for _, w := range withheld {
		fmt.Fprintf(&b, "withheld: %s changed; its content is not shown: %s\n", w.Path, w.Reason)
	}
	return b.String(), nil
}

// Restore is the checkpoint restore under the path rules: a name the rules
// deny changing is left as it is, and named.
func (t checkpointTools) Restore(ctx context.Context, id string, paths []string) (string, error) {
	_, write := t.c.filters()
	r, err := t.c.ws.RestoreFiltered(ctx, id, paths, write)
	t.c.auditRestore(ctx, r)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "restored %s to checkpoint %s: %d names changed back.", strings.Join(r.Restored, ", "), id, len(r.Changed))
	for _, p := range r.NotCovered {
		fmt.Fprintf(&b, "\n%s is a host directory a checkpoint cannot hold: it was left as it is.", p)
	}
	for _, ref := range r.Refused {
		fmt.Fprintf(&b, "\n%s was not restored: %s.", ref.Path, ref.Reason)
	}
	return b.String(), nil
}

func (t checkpointTools) Delete(ctx context.Context, id string) (string, error) {
	if err := t.c.ws.Delete(ctx, id); err != nil {
		return "", err
	}
	return "checkpoint " + id + " deleted", nil
}

// toolErr drops the JSON-RPC marker of bad input from an error for a tool.
func toolErr(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), jsonrpc.ErrInvalidParams.Error()+": "))
}
