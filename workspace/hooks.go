package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/vfsmount/vfsmount/agentbridge"
	"github.com/vfsmount/vfsmount/policy"
)

// autoNote is the line a tool result ends with when a checkpoint was taken
// before the call.
func autoNote(id string) string {
	return fmt.Sprintf("[checkpoint %s was taken before this call: restoring it undoes everything the call changed]", id)
}

// AutoVerbs are the verbs automatic checkpoints may precede
// (CheckpointOptions.Before): those that change the tree.
var AutoVerbs = []string{agentbridge.VerbWrite, agentbridge.VerbEdit, agentbridge.VerbDelete, agentbridge.VerbShell}

// effectful reports whether a canonical verb changes anything.
func effectful(verb string) bool {
	switch verb {
	case agentbridge.VerbWrite, agentbridge.VerbEdit, agentbridge.VerbDelete, agentbridge.VerbShell:
		return true
	}
	return false
}

// toolHooks returns the agentbridge hooks of the workspace's policy:
// approvals before effectful calls, then the automatic checkpoint of the
// config's checkpoint.before, and one audit line after every call.
func (ws *Workspace) toolHooks() (before func(context.Context, *agentbridge.CallInfo) error,
	after func(context.Context, *agentbridge.CallInfo, agentbridge.Result, time.Duration)) {
	if ws.opts.Approver != nil {
		ap := ws.opts.Approver
		before = func(ctx context.Context, c *agentbridge.CallInfo) error {
			// A dry run changes nothing, so there is nothing to approve.
			if c.DryRun || !ap.Applies(c.Verb) {
				return nil
			}
			call, err := json.Marshal(c)
			if err != nil {
				return fmt.Errorf("not approved: the call cannot be encoded: %v", err)
			}
			return ap.Approve(ctx, call)
		}
	}
	if ws.Checkpoints != nil && len(ws.opts.Checkpoint.Before) > 0 {
		approve, auto := before, ws.opts.Checkpoint.Before
		before = func(ctx context.Context, c *agentbridge.CallInfo) error {
			if approve != nil {
				if err := approve(ctx, c); err != nil {
					return err
				}
			}
			// A dry run changes nothing: there is nothing to undo.
			if c.DryRun || !slices.Contains(auto, c.Verb) {
				return nil
			}
			info, err := ws.Checkpoints.ws.Create(ctx, fmt.Sprintf("before %s %s", c.Tool, c.ID))
			if err != nil {
				return fmt.Errorf("no checkpoint could be taken before the call: %v", err)
			}
			c.Note = autoNote(info.ID)
			return nil
		}
	}
	if ws.opts.Audit != nil {
		log := ws.opts.Audit
		after = func(_ context.Context, c *agentbridge.CallInfo, res agentbridge.Result, d time.Duration) {
			out, why := "ok", ""
			switch {
			case c.Refused != "":
				out, why = "denied", c.Refused
			case res.IsError:
				// The text of a tool error may quote the file (an edit's
				// "most similar line"): the line says only that it failed.
				out = "error"
			case c.DryRun && effectful(c.Verb):
				out = "dry-run"
			}
			log.ToolCall(policy.ToolCall{CallID: c.ID, Tool: c.Tool, Verb: c.Verb, Args: c.Summary(),
				Paths: c.Paths, Outcome: out, Error: why, Duration: d})
		}
	}
	return before, after
}
