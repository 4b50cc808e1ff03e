package main

import (
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/policy"
)

// applyPolicy stacks the policy decorators on the union and adjusts the
// brief: a mount covered by a read_only prefix is shown read-only.
func (ws *workspace) applyPolicy(pc *policyConfig) {
	ws.Policy = pc
	if pc == nil {
		return
	}
	if !pc.Rules.Empty() {
		ws.FS = policy.Guard(ws.FS, pc.Rules)
	}
	if ws.Audit != nil {
		ws.FS = policy.Audit(ws.FS, ws.Audit)
	}
	for i := range ws.Brief {
		if pc.Rules.ReadOnlyAt(ws.Brief[i].Prefix) {
			ws.Brief[i].Writable = false
		}
	}
}

// toolFS is the tree the tool face gets before cache invalidation is
// stacked on: in a dry run, one that refuses every change.
func (ws *workspace) toolFS() mounts.FS {
	if ws.Policy != nil && ws.Policy.DryRun {
		return policy.Freeze(ws.FS)
	}
	return ws.FS
}
