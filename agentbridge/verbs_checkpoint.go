package agentbridge

import (
	"context"
	"fmt"
	"strings"
)

// The checkpoint family: tools that take, list, diff, restore and delete
// checkpoints of the whole workspace, when the host gives the workspace a
// [Checkpointer] (Options.Checkpoints). They are not in the default verb
// list (AllVerbs): a host turns them on. restore and delete are
// destructive, and say so in their hints. In a dry run, create, restore and
// delete report what they would do (restore: the diff it would undo).

// Checkpoint verb names.
const (
	VerbCheckpointCreate  = "checkpoint_create"
	VerbCheckpointList    = "checkpoint_list"
	VerbCheckpointDiff    = "checkpoint_diff"
	VerbCheckpointRestore = "checkpoint_restore"
	VerbCheckpointDelete  = "checkpoint_delete"
)

// CheckpointVerbs lists the checkpoint family, in presentation order.
var CheckpointVerbs = []string{VerbCheckpointCreate, VerbCheckpointList, VerbCheckpointDiff, VerbCheckpointRestore, VerbCheckpointDelete}

// Checkpointer is what the checkpoint tools call: the host's checkpoints of
// the whole workspace. Each method returns the text the model reads; an
// error is the tool's error.
type Checkpointer interface {
	Create(ctx context.Context, name string) (string, error)
	List(ctx context.Context) (string, error)
	// Diff is from checkpoint from to checkpoint to ("" is now), limited
	// to paths (workspace paths; none is all).
	Diff(ctx context.Context, from, to string, paths []string) (string, error)
	Restore(ctx context.Context, id string, paths []string) (string, error)
	Delete(ctx context.Context, id string) (string, error)
}

// checkpointVerbs are the rows of the family, over c.
func checkpointVerbs(c Checkpointer) []*verb {
	paths := func(a *args) ([]string, error) {
		ps, err := a.strs("paths")
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !strings.HasPrefix(p, "/") {
				return nil, a.errf("argument %q: %q is not an absolute workspace path", a.key("paths"), p)
			}
		}
		return ps, nil
	}
	return []*verb{
		{name: VerbCheckpointCreate, ann: Annotations{}, run: func(w *Workspace, ctx context.Context, a *args) (string, error) {
			name, err := a.str("name", false)
			if err != nil {
				return "", err
			}
			if w.dryRun {
				return "dry run: a checkpoint would be taken; nothing was done", nil
			}
			out, err := c.Create(ctx, name)
			return out, wrapTool(a, err)
		}},
		{name: VerbCheckpointList, ann: Annotations{ReadOnly: true, Idempotent: true}, run: func(w *Workspace, ctx context.Context, a *args) (string, error) {
			out, err := c.List(ctx)
			return out, wrapTool(a, err)
		}},
		{name: VerbCheckpointDiff, ann: Annotations{ReadOnly: true, Idempotent: true}, run: func(w *Workspace, ctx context.Context, a *args) (string, error) {
			from, err := a.str("id", true)
			if err != nil {
				return "", err
			}
			to, err := a.str("to", false)
			if err != nil {
				return "", err
			}
			ps, err := paths(a)
			if err != nil {
				return "", err
			}
			out, err := c.Diff(ctx, from, to, ps)
			return out, wrapTool(a, err)
		}},
		// Restoring the same checkpoint twice leaves the same tree.
		{name: VerbCheckpointRestore, ann: Annotations{Destructive: true, Idempotent: true}, run: func(w *Workspace, ctx context.Context, a *args) (string, error) {
			id, err := a.str("id", true)
			if err != nil {
				return "", err
			}
			ps, err := paths(a)
			if err != nil {
				return "", err
			}
			if w.dryRun {
				// What the restore would undo, without undoing it.
				diff, err := c.Diff(ctx, id, "", ps)
				if err != nil {
					return "", wrapTool(a, err)
				}
				return "dry run: restoring checkpoint " + id + " would undo these changes; nothing was done\n" + diff, nil
			}
			out, err := c.Restore(ctx, id, ps)
			return out, wrapTool(a, err)
		}},
		{name: VerbCheckpointDelete, ann: Annotations{Destructive: true, Idempotent: true}, run: func(w *Workspace, ctx context.Context, a *args) (string, error) {
			id, err := a.str("id", true)
			if err != nil {
				return "", err
			}
			if w.dryRun {
				return "dry run: checkpoint " + id + " would be deleted; nothing was done", nil
			}
			out, err := c.Delete(ctx, id)
			return out, wrapTool(a, err)
		}},
	}
}

func wrapTool(a *args, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %v", a.tool, err)
}

const (
	descCheckpointCreate  = "Take a checkpoint of the whole workspace: every writable file, however it was changed (by these tools or by shell commands). Returns its id; checkpoint_restore brings the workspace back to it."
	descCheckpointList    = "List the checkpoints of the workspace, oldest first: id, time, size, name."
	descCheckpointDiff    = "Show what changed since a checkpoint (or between two), as a git diff. A changed file the policy denies reading is named as withheld, not shown."
	descCheckpointRestore = "Bring the workspace back to a checkpoint: every change made since (by any tool or shell command) is undone, " +
		"except to files the policy denies changing, which are left as they are and named. " +
		"The checkpoints are kept, so restoring a newer one undoes a restore."
	descCheckpointDelete = "Delete a checkpoint."
)

// checkpointTools are the family's tools, the same in every dialect.
func checkpointTools() []*dialectTool {
	return []*dialectTool{
		{name: VerbCheckpointCreate, verb: VerbCheckpointCreate, desc: descCheckpointCreate, schema: schema(
			prop{"name", "string", "A name to remember it by", false},
		)},
		{name: VerbCheckpointList, verb: VerbCheckpointList, desc: descCheckpointList, schema: schema()},
		{name: VerbCheckpointDiff, verb: VerbCheckpointDiff, desc: descCheckpointDiff, schema: schema(
			prop{"id", "string", "The checkpoint to diff from", true},
			prop{"to", "string", "A later checkpoint to diff to (default: the workspace now)", false},
			prop{"paths", strList, "Absolute workspace paths to limit the diff to", false},
		)},
		{name: VerbCheckpointRestore, verb: VerbCheckpointRestore, desc: descCheckpointRestore, schema: schema(
			prop{"id", "string", "The checkpoint to restore", true},
			prop{"paths", strList, "Absolute workspace paths: restore only these (and what is below them)", false},
		)},
		{name: VerbCheckpointDelete, verb: VerbCheckpointDelete, desc: descCheckpointDelete, schema: schema(
			prop{"id", "string", "The checkpoint to delete", true},
		)},
	}
}

// The family is the same in every dialect, and kept out of the dialects'
// own lists (their golden files describe the harnesses' tools): see
// extraToolList.
var checkpointToolList = checkpointTools()
