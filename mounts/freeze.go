package mounts

import (
	"context"
	"errors"
	"time"
)

// ErrNoCheckpoint is wrapped by a [FreezeFS]'s errors for a checkpoint id
// it does not hold.
var ErrNoCheckpoint = errors.New("no such checkpoint")

// Freezing and exporting
//
// Two capabilities are for the workspace's services rather than its faces:
// a mount whose writable state checkpoints can freeze ([FreezeFS]: a
// memory tree, and an overlay over one), and a mount whose changes go back
// to version control ([ExportFS]: a writable git mount). A service finds
// them with [Freezable] and [Exportable] on the mounts of its table, never
// by their concrete types; each mount keeps its own locks and layout
// behind them. Neither is forwarded by the decorators: the faces never
// freeze or export, and a service that does asks the policy itself (see
// package checkpoint's filters).

// CheckpointInfo describes one checkpoint of a mount.
type CheckpointInfo struct {
	ID   string
	Name string
	Time time.Time
	// Inodes counts the inodes the checkpoint froze: those changed since
	// the checkpoint before it (every inode for the first one).
	Inodes int
	// Bytes estimates what the checkpoint holds that no older one does:
	// the file pages written since the checkpoint before it, and the
	// metadata of the inodes it froze.
	Bytes int64
}

// RestoreIntent is a participant's record of a restore across stores that
// is prepared but not decided: restore ID brings Paths (all when empty)
// back to Checkpoint, if the coordinator (the store of that identity)
// decides it.
type RestoreIntent struct {
	ID          string   `json:"id"`
	Checkpoint  string   `json:"checkpoint"`
	Paths       []string `json:"paths,omitempty"`
	Coordinator string   `json:"coordinator"`
}

// RestoreDecision is the coordinator's record that restore ID happened:
// the participants (their store identities) apply it on load if they had
// not.
type RestoreDecision struct {
	ID           string   `json:"id"`
	Participants []string `json:"participants"`
}

// RestoreMark is what a restore's store mutation records besides the
// restore: the coordinator's decision, or the settling of a participant's
// intent. The zero mark records neither.
type RestoreMark struct {
	Decided *RestoreDecision
	Settled string
}

// FreezeFS is implemented by a mount whose state checkpoints can freeze
// and bring back, cheaply and at one instant. Names are the mount's.
//
// Checkpoints of several mounts at one instant hold them all at once:
// [FreezeFS.Freeze] holds off every change of one mount until the [Frozen]
// is released, and the caller freezes them in one order (package
// checkpoint: by prefix). What the mount holds, and in which order, is its
// own: an overlay holds itself and then its upper.
//
// A mount whose checkpoints live in a store of its own (a persist file)
// takes part in restores across stores, as a two-phase commit: it has a
// StoreIdentity, and records intents and decisions ([RestoreIntent],
// [RestoreDecision]). One without a store has the identity "" and is never
// asked to.
type FreezeFS interface {
	FS
	// Freeze holds every change of the mount off until the Frozen is
	// released.
	Freeze() Frozen
	// Checkpoints lists the mount's checkpoints, oldest first.
	Checkpoints() []CheckpointInfo
	// ChangedSince lists the names changed since checkpoint id, as the
	// operations named them (sorted; may name what no longer exists).
	ChangedSince(id string) ([]string, error)
	// CheckpointView is the mount as it was at checkpoint id, to read: a
	// tree of its own, which a change does not take back to the mount.
	CheckpointView(ctx context.Context, id string) (FS, error)
	// DeleteCheckpoint drops checkpoint id.
	DeleteCheckpoint(id string) error

	// StoreIdentity is the identity of the mount's store ("" without one).
	StoreIdentity() string
	// PendingRestore is the intent the store holds, nil when none.
	PendingRestore() *RestoreIntent
	// DecidedRestores are the decisions the store holds.
	DecidedRestores() []RestoreDecision
	// PrepareRestore records intent (phase 1), not yet durable: Sync it.
	PrepareRestore(intent RestoreIntent) error
	// DiscardRestore drops the intent of restore id.
	DiscardRestore(id string) error
	// ForgetRestores drops the decisions of restores ids.
	ForgetRestores(ids ...string) error
	// Sync makes what the mount holds durable.
	Sync(ctx context.Context, name string) error
}

// Frozen is a mount held still by [FreezeFS.Freeze]: what may be done to
// it only while nothing else changes it.
type Frozen interface {
	// Checkpoint takes checkpoint id, named name (free text).
	Checkpoint(id, name string) (CheckpointInfo, error)
	// DeleteCheckpoint drops checkpoint id (undoing a Checkpoint of a
	// failed whole).
	DeleteCheckpoint(id string) error
	// Restore brings names (and what is below them; nil: the whole mount)
	// back to checkpoint id, with mark in the same store mutation, and
	// returns the names that changed. The checkpoints are kept.
	Restore(id string, names []string, mark RestoreMark) ([]string, error)
	// Decided reports whether the store holds the decision of restore id.
	Decided(id string) bool
	// Release lets changes go on. It may be called more than once.
	Release()
}

// Freezable returns fsys as a [FreezeFS] when it offers freezing
// ([CapFreeze]: an overlay offers it only over an upper that does).
func Freezable(fsys FS) (FreezeFS, bool) {
	if !Capabilities(fsys).Has(CapFreeze) {
		return nil, false
	}
	f, ok := fsys.(FreezeFS)
	return f, ok
}

// ExportFS is implemented by a writable mount over one commit whose
// changes go back to git (a writable git mount). Formats are git's, as
// gitfs.ParseDiffFormat reads them ("patch", "stat", "name-status"), and
// "names" (every name the diff touches, each ended by NUL); names are the
// mount's; the names in a diff are the repository's.
type ExportFS interface {
	FS
	// BaseCommit is the full id of the commit the mount is over.
	BaseCommit() string
	// ExportDiff is the mount's changes against its commit, limited to
	// names (none: all).
	ExportDiff(ctx context.Context, format string, names ...string) (string, error)
	// ExportDiffStates is the difference from state from to state to,
	// each the mount or a [FreezeFS.CheckpointView] of it.
	ExportDiffStates(ctx context.Context, from, to FS, format string, names ...string) (string, error)
	// ExportCommit writes the mount's state as a commit on its commit, on
	// branch of the source repository (an existing one only with force),
	// and returns its id; "" when there is nothing to commit.
	ExportCommit(ctx context.Context, msg, branch string, force bool) (string, error)
	// MountName is the mount's name of a name in its diffs (the
	// repository's), false for one outside the mount.
	MountName(full string) (string, bool)
	// ExportReset brings names (and what is below them; "." the whole
	// mount) back to the commit, and returns every name that changed.
	ExportReset(ctx context.Context, names ...string) ([]string, error)
}

// Exportable returns fsys as an [ExportFS] when it is one.
func Exportable(fsys FS) (ExportFS, bool) {
	e, ok := fsys.(ExportFS)
	return e, ok
}
