package overlayfs

import (
	"context"
	"strings"
	"sync"

	"github.com/vfsmount/vfsmount/mounts"
)

// Checkpoints of an overlay are checkpoints of its upper layer, which holds
// everything the overlay knows (see "# Bookkeeping"). An overlay over an
// upper that can freeze ([mounts.FreezeFS]: a memory tree) can freeze
// itself: it holds its own lock (a change of the merged tree is several
// calls on the upper, and a checkpoint must see none half done), then its
// upper's, and delegates, naming upper names after merged ones both ways.
// That lock order lives here and nowhere else. Over any other upper (a host
// directory) it offers no freezing ([mounts.CapFreeze] is not in its
// capabilities).

var _ mounts.FreezeFS = (*FS)(nil)

// freezer is the upper as the freezing capability; nil when it has none.
func (f *FS) freezer() mounts.FreezeFS {
	z, _ := mounts.Freezable(f.upper)
	return z
}

// hold holds off every change of the merged tree until release is called.
// Writes through files already open go to the upper directly: freezing
// the upper holds those off itself.
func (f *FS) hold() (release func()) {
	f.mu.Lock()
	var once sync.Once
	return func() { once.Do(f.mu.Unlock) }
}

// Freeze holds the overlay, then its upper.
func (f *FS) Freeze() mounts.Frozen {
	release := f.hold()
	return &frozenOverlay{f: f, up: f.freezer().Freeze(), release: release}
}

type frozenOverlay struct {
	f       *FS
	up      mounts.Frozen
	release func()
}

func (z *frozenOverlay) Checkpoint(id, name string) (mounts.CheckpointInfo, error) {
	return z.up.Checkpoint(id, name)
}
func (z *frozenOverlay) DeleteCheckpoint(id string) error { return z.up.DeleteCheckpoint(id) }
func (z *frozenOverlay) Decided(id string) bool           { return z.up.Decided(id) }

// Restore restores the upper's names of names (all of the upper when nil)
// and returns the merged names changed; the journal (git's fsmonitor
// answers) hears of them, as of any change.
func (z *frozenOverlay) Restore(id string, names []string, mark mounts.RestoreMark) ([]string, error) {
	var ups []string
	if names != nil {
		ups = make([]string, len(names))
		for i, n := range names {
			ups[i] = up(n)
		}
	}
	changed, err := z.up.Restore(id, ups, mark)
	merged := mergedNames(changed)
	z.f.Changed(merged...)
	return merged, err
}

func (z *frozenOverlay) Release() {
	z.up.Release()
	z.release()
}

// Checkpoints are the upper's.
func (f *FS) Checkpoints() []mounts.CheckpointInfo { return f.freezer().Checkpoints() }

// ChangedSince is the upper's, in merged names.
func (f *FS) ChangedSince(id string) ([]string, error) {
	names, err := f.freezer().ChangedSince(id)
	return mergedNames(names), err
}

// CheckpointView is an overlay of the upper as it was at checkpoint id
// over the same lower.
func (f *FS) CheckpointView(ctx context.Context, id string) (mounts.FS, error) {
	v, err := f.freezer().CheckpointView(ctx, id)
	if err != nil {
		return nil, err
	}
	return f.Over(ctx, v)
}

// DeleteCheckpoint, and the restore intents, are the upper's.
func (f *FS) DeleteCheckpoint(id string) error { return f.freezer().DeleteCheckpoint(id) }
func (f *FS) StoreIdentity() string            { return f.freezer().StoreIdentity() }
func (f *FS) PendingRestore() *mounts.RestoreIntent {
	p := f.freezer().PendingRestore()
	if p != nil && p.Paths != nil {
		q := *p
		q.Paths = mergedNames(p.Paths)
		return &q
	}
	return p
}
func (f *FS) DecidedRestores() []mounts.RestoreDecision { return f.freezer().DecidedRestores() }
func (f *FS) PrepareRestore(intent mounts.RestoreIntent) error {
	// An intent names merged names; the upper restores upper ones.
	if intent.Paths != nil {
		ups := make([]string, len(intent.Paths))
		for i, n := range intent.Paths {
			ups[i] = up(n)
		}
		intent.Paths = ups
	}
	return f.freezer().PrepareRestore(intent)
}
func (f *FS) DiscardRestore(id string) error     { return f.freezer().DiscardRestore(id) }
func (f *FS) ForgetRestores(ids ...string) error { return f.freezer().ForgetRestores(ids...) }

// Over returns an overlay of upper over f's lower with f's options: upper
// as it was at a checkpoint, say, to list its changes or read it. upper is
// an upper layer f made (a copy of its upper); New's checks apply, and it
// empties upper's work directory.
func (f *FS) Over(ctx context.Context, upper mounts.FS) (*FS, error) {
	return New(ctx, f.lower, upper, f.opts)
}

// mergedNames are the merged names of upper names, the upper's
// bookkeeping (the work and meta directories, which no merged name shows)
// left out.
func mergedNames(upper []string) []string {
	var out []string
	for _, n := range upper {
		switch {
		case n == treeDir:
			out = append(out, ".")
		case strings.HasPrefix(n, treeDir+"/"):
			out = append(out, n[len(treeDir)+1:])
		}
	}
	return out
}
