package memfs

import (
	"context"
	"fmt"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

// Restores across stores
//
// One restore of a workspace may change several trees, each in a store of
// its own (a bbolt file each): each store commits its part in a
// transaction of its own, so a crash between two of them would leave the
// workspace torn. A workspace makes it one with a two-phase commit
// (package checkpoint drives it; this file is what a tree and its store
// keep of it):
//
//  1. prepare: every participant store but the coordinator records a
//     pending [RestoreIntent] ([FS.PrepareRestore]), and is synced;
//  2. commit: the coordinator's restore mutation records the restore as
//     decided ([RestoreMark.Decided]) in the same transaction, and is
//     synced: this is the point of no return. Each participant's restore
//     mutation then clears its intent ([RestoreMark.Settled]); once they
//     are durable the coordinator forgets the decision
//     ([FS.ForgetRestores]).
//  3. on load, a tree with a pending intent ([FS.PendingRestore]) asks the
//     coordinator's tree ([FS.DecidedRestores]): decided, the restore is
//     applied again from the checkpoint, which the participant holds;
//     not, the intent is dropped ([FS.DiscardRestore]).
//
// A store that keeps none of it (one without [IdentifiedStore]) takes part
// in-process only.

// IdentifiedStore is a [Store] with an identity of its own, kept in what
// it persists and stable across restarts (a bbolt file's id): a restore
// intent names its coordinator by it. A store that is one implements it and
// keeps the intent records of [Mutation].
type IdentifiedStore interface {
	Store
	Identity() string
}

// RestoreIntent is a participant's record of a workspace restore under
// way: restore ID (unique, never reused) brings the tree back to checkpoint
// Checkpoint (Paths as [FS.restorePathsHeld] takes them; none is the whole
// tree), if the store Coordinator decided it.
type RestoreIntent = mounts.RestoreIntent

// RestoreDecision is the coordinator's record that restore ID happened:
// the participants (their store identities) apply it on load if they had
// not.
type RestoreDecision = mounts.RestoreDecision

// RestoreMark is what a restore's mutation records besides the restore:
// the coordinator's decision, or the settling of a participant's intent.
type RestoreMark = mounts.RestoreMark

// StoreIdentity is the identity of the tree's store, "" when it has none
// (no store, or one that keeps no restore intents).
func (f *FS) StoreIdentity() string {
	if s, ok := f.store.(IdentifiedStore); ok {
		return s.Identity()
	}
	return ""
}

// PendingRestore is the restore intent the store had when the tree was
// loaded, or that [FS.PrepareRestore] recorded since; nil when none.
func (f *FS) PendingRestore() *RestoreIntent {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.pending == nil {
		return nil
	}
	p := *f.pending
	p.Paths = slices.Clone(p.Paths)
	return &p
}

// DecidedRestores are the decisions the tree's store keeps (as the
// coordinator of workspace restores).
func (f *FS) DecidedRestores() []RestoreDecision {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.decided)
}

// PrepareRestore records intent in the store (phase 1), replacing any
// older one; the caller syncs it. It changes nothing else.
func (f *FS) PrepareRestore(intent RestoreIntent) error {
	if f.StoreIdentity() == "" {
		return fmt.Errorf("restore %s: the tree has no store to prepare it in", intent.ID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	intent.Paths = slices.Clone(intent.Paths)
	if err := f.store.Commit(&Mutation{Op: "restore prepare", Prepare: &intent}); err != nil {
		return fmt.Errorf("restore %s: preparing it: %w", intent.ID, err)
	}
	f.pending = &intent
	return nil
}

// DiscardRestore drops the pending intent id: the restore did not happen.
func (f *FS) DiscardRestore(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil || f.pending.ID != id {
		return nil
	}
	if err := f.store.Commit(&Mutation{Op: "restore discard", Settled: id}); err != nil {
		return fmt.Errorf("restore %s: discarding it: %w", id, err)
	}
	f.pending = nil
	return nil
}

// ForgetRestores drops the decisions ids: every participant applied them.
func (f *FS) ForgetRestores(ids ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(ids) == 0 || f.StoreIdentity() == "" {
		return nil
	}
	if err := f.store.Commit(&Mutation{Op: "restore forget", Forget: slices.Clone(ids)}); err != nil {
		return fmt.Errorf("forgetting restores: %w", err)
	}
	f.decided = slices.DeleteFunc(f.decided, func(d RestoreDecision) bool { return slices.Contains(ids, d.ID) })
	return nil
}

// restoreMarkedHeld is [FS.restorePathsHeld] (names nil: [FS.restoreHeld])
// whose store mutation carries mark too, in the same transaction.
func (f *FS) restoreMarkedHeld(id string, names []string, mark RestoreMark) ([]string, error) {
	f.mark = &mark
	defer func() { f.mark = nil }()
	if names == nil {
		return f.restoreHeld(id)
	}
	return f.restorePathsHeld(id, names)
}

// marked adds the mark of the restore under way to its mutation m; the
// caller holds f.mu exclusively.
func (f *FS) marked(m *Mutation) {
	if f.mark == nil {
		return
	}
	m.Decided, m.Settled = f.mark.Decided, f.mark.Settled
}

// markDone updates what the tree knows of the intents once m is
// committed; the caller holds f.mu exclusively.
func (f *FS) markDone(m *Mutation) {
	if m.Decided != nil {
		f.decided = append(f.decided, *m.Decided)
	}
	if m.Settled != "" && f.pending != nil && f.pending.ID == m.Settled {
		f.pending = nil
	}
}

// decidedHeld reports whether the held tree's store was given the
// decision of restore id (by [FS.restoreMarkedHeld]); the caller holds it
// ([FS.hold]).
func (f *FS) decidedHeld(id string) bool {
	return slices.ContainsFunc(f.decided, func(d RestoreDecision) bool { return d.ID == id })
}

// Freeze holds every change of the tree off until the returned Frozen is
// released: the freezing capability ([mounts.FreezeFS]) a workspace's
// checkpoints use to hold all their trees at one instant.
func (f *FS) Freeze() mounts.Frozen {
	// A lazily restored tree fetches what it has left first: a
	// checkpoint shares the tree's content (lazy.go).
	_ = f.LoadAll(context.Background(), 8)
	return &frozenTree{f: f, release: f.hold()}
}

// frozenTree is a tree held by Freeze.
type frozenTree struct {
	f       *FS
	release func()
}

func (t *frozenTree) Checkpoint(id, name string) (CheckpointInfo, error) {
	return t.f.checkpointHeld(id, name)
}
func (t *frozenTree) DeleteCheckpoint(id string) error { return t.f.deleteCheckpointHeld(id) }
func (t *frozenTree) Restore(id string, names []string, mark RestoreMark) ([]string, error) {
	return t.f.restoreMarkedHeld(id, names, mark)
}
func (t *frozenTree) Decided(id string) bool { return t.f.decidedHeld(id) }
func (t *frozenTree) Release()               { t.release() }

var _ mounts.FreezeFS = (*FS)(nil)
