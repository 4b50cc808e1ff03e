package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// checkpoints serves the checkpoints of a workspace (jsonrpc.Checkpointer:
// vfsmount checkpoint, JSON-RPC, the checkpoint tools): every memory mount
// and every writable git mount's memory upper, frozen at once by package
// checkpoint. Like the exporter, it works on the mounts themselves, below
// the policy layers: a checkpoint is the user's own undo, not a write of
// either face. A restore tells the kernel face which names changed, so the
// shell sees the restored content at once.
type checkpoints struct {
	ws *checkpoint.Workspace
}

var _ jsonrpc.Checkpointer = (*checkpoints)(nil)

// newCheckpoints builds the checkpoints of the union table; nil when no
// mount has a layer to freeze. keep bounds their number (0: no bound).
// backing says what backs each mount beyond its description, by prefix
// (a host mount's directory, a persist file).
func newCheckpoints(table map[string]mounts.FS, backing map[string]string, keep int, notify func(names ...string)) (*checkpoints, error) {
	c := &checkpoints{}
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
		switch f := fsys.(type) {
		case *memfs.FS:
			m.Tree = f
		case *writableGit:
			m.Commit = f.Git().Commit()
			if up, ok := f.FS.Upper().(*memfs.FS); ok {
				m.Tree, m.Overlay, m.Git = up, f.FS.FS, f.FS
			}
		default:
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

func (c *checkpoints) CheckpointCreate(ctx context.Context, p jsonrpc.CheckpointCreateParams) (jsonrpc.CheckpointInfo, error) {
	info, err := c.ws.Create(ctx, p.Name)
	if err != nil {
		return jsonrpc.CheckpointInfo{}, err
	}
	return infoOf(info), nil
}

func (c *checkpoints) CheckpointList(ctx context.Context) (jsonrpc.CheckpointListResult, error) {
	res := jsonrpc.CheckpointListResult{Checkpoints: []jsonrpc.CheckpointInfo{}}
	for _, i := range c.ws.List() {
		res.Checkpoints = append(res.Checkpoints, infoOf(i))
	}
	return res, nil
}

func (c *checkpoints) CheckpointRestore(ctx context.Context, p jsonrpc.CheckpointRestoreParams) (jsonrpc.CheckpointRestoreResult, error) {
	if p.ID == "" {
		return jsonrpc.CheckpointRestoreResult{}, fmt.Errorf("%w: a checkpoint id is required", jsonrpc.ErrInvalidParams)
	}
	r, err := c.ws.Restore(ctx, p.ID, p.Paths)
	if err != nil {
		return jsonrpc.CheckpointRestoreResult{}, rpcErr(err)
	}
	return jsonrpc.CheckpointRestoreResult{Restored: r.Restored, NotCovered: r.NotCovered, Changed: r.Changed}, nil
}

func (c *checkpoints) CheckpointDelete(ctx context.Context, p jsonrpc.CheckpointDeleteParams) (jsonrpc.CheckpointDeleteResult, error) {
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
func (c *checkpoints) CheckpointDiff(ctx context.Context, p jsonrpc.CheckpointDiffParams) (jsonrpc.DiffResult, error) {
	var format gitfs.DiffFormat
	switch p.Format {
	case "", "patch":
		format = gitfs.Patch
	case "stat":
		format = gitfs.Stat
	case "name-status":
		format = gitfs.NameStatus
	default:
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: format %q: want patch, stat or name-status", jsonrpc.ErrInvalidParams, p.Format)
	}
	if p.From == "" {
		return jsonrpc.DiffResult{}, fmt.Errorf("%w: a checkpoint to diff from is required", jsonrpc.ErrInvalidParams)
	}
	text, err := c.ws.Diff(ctx, p.From, p.To, format, p.Paths...)
	return jsonrpc.DiffResult{Text: text}, rpcErr(err)
}

// checkpointTools adapts the checkpoints to the checkpoint tool family
// (agentbridge.Checkpointer): the same operations, answered in text.
type checkpointTools struct{ c *checkpoints }

var _ agentbridge.Checkpointer = checkpointTools{}

func (t checkpointTools) Create(ctx context.Context, name string) (string, error) {
	info, err := t.c.ws.Create(ctx, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint %s taken (%s of changes since the previous one).", info.ID, humanBytes(info.Bytes))
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
		fmt.Fprintf(&b, "%s  %s  %s", c.ID, c.Time.Format(time.RFC3339), humanBytes(c.Bytes))
		if c.Name != "" {
			fmt.Fprintf(&b, "  %s", c.Name)
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func (t checkpointTools) Diff(ctx context.Context, from, to string, paths []string) (string, error) {
	res, err := t.c.CheckpointDiff(ctx, jsonrpc.CheckpointDiffParams{From: from, To: to, Paths: paths})
	if err != nil {
		return "", toolErr(err)
	}
	if res.Text == "" {
		return "no changes", nil
	}
	return res.Text, nil
}

func (t checkpointTools) Restore(ctx context.Context, id string, paths []string) (string, error) {
	r, err := t.c.ws.Restore(ctx, id, paths)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "restored %s to checkpoint %s: %d names changed back.", strings.Join(r.Restored, ", "), id, len(r.Changed))
	for _, p := range r.NotCovered {
		fmt.Fprintf(&b, "\n%s is a host directory a checkpoint cannot hold: it was left as it is.", p)
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
