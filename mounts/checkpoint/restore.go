package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/vfsmount/vfsmount/mounts"
)

// Restores across persisted trees
//
// Each persisted tree (a memory mount or an overlay's upper in a persist
// file) commits its part of a restore in a transaction of its own file. A
// restore that changes two or more of them is made one with a two-phase
// commit, the first of them in prefix order coordinating:
//
//  1. prepare: every other one (a participant) records a pending intent in
//     its file (restore id R, checkpoint, names, the coordinator's file
//     identity) and is synced; nothing else changes. A crash now leaves
//     every tree as it was: the intents are discarded on load.
//  2. commit: with every tree held, the coordinator's restore records "R
//     decided" in the same transaction and is synced: the point of no
//     return. Each participant's restore then clears its intent in its
//     own transaction; once they are synced the coordinator forgets R.
//  3. on load ([New]), a tree with a pending intent asks the coordinator's
//     tree: R decided, the restore is applied again from the checkpoint
//     (which the participant's file holds) and the intent cleared; not
//     decided, the intent is discarded. Decisions every participant of
//     which settled are then forgotten.
//
// Readers see the workspace before or after, as with one tree: the trees
// are held throughout phase 2. What that costs is one sync of the
// coordinator's file while they are held. A restore of one persisted tree
// (and memory trees without a file, which take part in-process only) has
// no prepare and no sync under the hold.

// twoPhase is one restore across persisted trees.
type twoPhase struct {
	id           string
	coord        *Mount
	participants []*Mount
}

// step marks a step of a two-phase restore for a test that watches them
// (export_test.go): "prepared", "decided", "synced <prefix>" (a
// participant's restore is durable), "forgotten".
func (w *Workspace) step(name string) {
	if w.steps != nil {
		w.steps(name)
	}
}

// prepare runs phase 1 for the trees ms that have a store of their own;
// nil when fewer than two do.
func (w *Workspace) prepare(ctx context.Context, ckpt string, ms []*Mount, subs map[*Mount][]string) (*twoPhase, error) {
	var persisted []*Mount
	for _, m := range ms {
		if m.Tree.StoreIdentity() != "" {
			persisted = append(persisted, m)
		}
	}
	if len(persisted) < 2 {
		return nil, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	t := &twoPhase{id: "r" + hex.EncodeToString(b[:]), coord: persisted[0], participants: persisted[1:]}
	for i, p := range t.participants {
		intent := mounts.RestoreIntent{ID: t.id, Checkpoint: ckpt, Paths: subs[p], Coordinator: t.coord.Tree.StoreIdentity()}
		err := p.Tree.PrepareRestore(intent)
		if err == nil {
			err = p.Tree.Sync(ctx, ".")
		}
		if err != nil {
			t.abort(t.participants[:i+1]...)
			return nil, fmt.Errorf("restore of %s: %w", p.Prefix, err)
		}
	}
	w.step("prepared")
	return t, nil
}

// mark is what m's restore mutation carries.
func (t *twoPhase) mark(m *Mount) mounts.RestoreMark {
	if m == t.coord {
		d := &mounts.RestoreDecision{ID: t.id}
		for _, p := range t.participants {
			d.Participants = append(d.Participants, p.Tree.StoreIdentity())
		}
		return mounts.RestoreMark{Decided: d}
	}
	if slices.Contains(t.participants, m) {
		return mounts.RestoreMark{Settled: t.id}
	}
	return mounts.RestoreMark{}
}

// abort discards the intents of the participants ms (all when none is
// given), which are not held: the restore did not happen. It is best
// effort: an intent left behind is discarded on load, the coordinator not
// having decided.
func (t *twoPhase) abort(ms ...*Mount) {
	if len(ms) == 0 {
		ms = t.participants
	}
	for _, p := range ms {
		_ = p.Tree.DiscardRestore(t.id)
	}
}

// finish forgets the decision once every participant is synced (the
// caller did). It need not be durable: a decision left behind is
// forgotten on the next load.
func (t *twoPhase) finish() error {
	if t == nil {
		return nil
	}
	return t.coord.Tree.ForgetRestores(t.id)
}

// recoverRestores runs phase 3 for the trees a restart loaded.
func (w *Workspace) recoverRestores(ctx context.Context) error {
	byID := map[string]*Mount{}
	for _, m := range w.frozen() {
		if id := m.Tree.StoreIdentity(); id != "" {
			byID[id] = m
		}
	}
	var errs []error
	for _, m := range w.frozen() {
		p := m.Tree.PendingRestore()
		if p == nil {
			continue
		}
		coord := byID[p.Coordinator]
		if coord == nil {
			// The coordinator's file is not in this workspace:
			// nobody can say. The intent stays (a later restore
			// replaces it); the tree is as its own file left it.
			continue
		}
		decided := slices.ContainsFunc(coord.Tree.DecidedRestores(), func(d mounts.RestoreDecision) bool { return d.ID == p.ID })
		var err error
		if decided {
			if !m.Has(p.Checkpoint) {
				err = fmt.Errorf("%w: %s", ErrUnknown, p.Checkpoint)
			} else {
				frozen := m.Tree.Freeze()
				_, err = frozen.Restore(p.Checkpoint, p.Paths, mounts.RestoreMark{Settled: p.ID})
				frozen.Release()
			}
		} else {
			err = m.Tree.DiscardRestore(p.ID)
		}
		if err == nil {
			err = m.Tree.Sync(ctx, ".")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("finishing restore %s of %s: %w", p.ID, m.Prefix, err))
		}
	}
	// Forget the decisions every participant of which has settled (or
	// never needed to: it is here, with no intent of that id).
	for _, m := range w.frozen() {
		var done []string
		for _, d := range m.Tree.DecidedRestores() {
			all := true
			for _, pid := range d.Participants {
				if p := byID[pid]; p == nil || pendingIs(p, d.ID) {
					all = false
				}
			}
			if all {
				done = append(done, d.ID)
			}
		}
		if err := m.Tree.ForgetRestores(done...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Prefix, err))
		}
	}
	return errors.Join(errs...)
}

func pendingIs(m *Mount, id string) bool {
	p := m.Tree.PendingRestore()
	return p != nil && p.ID == id
}
