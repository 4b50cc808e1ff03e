// Package checkpoint takes checkpoints of a whole workspace: every writable
// layer of it at once (memory mounts, and the upper layers of copy-on-write
// overlays), restorable as one.
//
// A [Workspace] is built from the mounts of a workspace ([Mount]), each
// with what backs it. A memory mount, or an overlay whose upper layer is a
// memory tree (kept in a persist file or not), is frozen by a checkpoint of
// that tree ([mounts.FreezeFS]): instant, costing in what changed since
// the previous checkpoint, sharing unchanged data. An immutable mount (a
// git commit) needs no freezing: the manifest records its commit. A host
// directory, read-write or as an overlay's upper, cannot be frozen: the
// manifest says it is not covered, and a restore reports it.
//
// Creating a checkpoint holds every covered mount still at once (each
// overlay's tree lock, then its upper's; a memory mount's tree lock), in
// prefix order, so the checkpoint is one instant of the whole workspace.
// A restore holds them the same way: a reader sees the workspace before or
// after, never a mix, and a write after the restore lands on the restored
// tree.
//
// A persisted tree keeps its checkpoints across restarts; [New] finds them
// again. A checkpoint a tree lost (a memory mount without a file,
// restarted) restores the trees that have it and reports the others as not
// covered.
//
// A restore that changes two or more persisted trees (each its own file)
// is one two-phase commit across their files, so a crash leaves the
// workspace before or after it, never torn; [New] finishes or undoes one a
// crash interrupted (see restore.go).
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrNoWritable is wrapped by [New] for a workspace with no layer a
// checkpoint could freeze.
var ErrNoWritable = errors.New("the workspace has no writable layer a checkpoint can freeze (memory mounts, or git mounts made writable over memory)")

// ErrUnknown is wrapped by the errors for a checkpoint id the workspace
// does not have.
var ErrUnknown = errors.New("no such checkpoint")

// ErrBadPath is wrapped by the errors for a path a restore cannot take.
var ErrBadPath = errors.New("bad path")

// ErrUnfinished is wrapped by [New] when a restore across persisted trees
// that a crash interrupted cannot be finished (or undone) on load.
var ErrUnfinished = errors.New("a restore interrupted by a crash could not be finished")

// Coverage says what a checkpoint does with a mount.
type Coverage string

const (
	// Frozen: the mount's writable layer is in the checkpoint.
	Frozen Coverage = "frozen"
	// Immutable: the mount cannot change; the manifest's Source says
	// what it is (a commit).
	Immutable Coverage = "immutable"
	// NotCovered: the mount can change but the checkpoint cannot hold it
	// (a host directory); a restore leaves it as it is.
	NotCovered Coverage = "not covered"
)

// Mount is one mount of the workspace.
type Mount struct {
	// Prefix is the mount point, "/memory".
	Prefix string
	// Type and Source describe it for the manifest (mounts.Description:
	// "git", "copy-on-write over git@SHA"); Commit is the full SHA of the
	// commit a git mount (or the lower of a writable one) serves.
	Type, Source, Commit string
	// Tree is the mount's freezing capability ([mounts.Freezable]: a
	// memory mount, or an overlay over a memory tree); nil when it has
	// none.
	Tree mounts.FreezeFS
	// Export is the mount's export capability ([mounts.Exportable]: a
	// writable git mount), when it has one: a diff of the mount is then
	// git's against its commit (as its export prints it), not a diff of
	// two trees of files.
	Export mounts.ExportFS
	// Immutable says the mount cannot change at all.
	Immutable bool
}

func (m *Mount) coverage() Coverage {
	switch {
	case m.Tree != nil:
		return Frozen
	case m.Immutable:
		return Immutable
	}
	return NotCovered
}

// Entry is one mount in a checkpoint's manifest.
type Entry struct {
	Prefix   string   `json:"prefix"`
	Type     string   `json:"type"`
	Source   string   `json:"source"`
	Commit   string   `json:"commit,omitempty"`
	Coverage Coverage `json:"coverage"`
}

// Info describes a checkpoint.
type Info struct {
	ID   string    `json:"id"`
	Name string    `json:"name,omitempty"`
	Time time.Time `json:"time"`
	// Bytes estimates what the checkpoint holds that no older one does
	// (the data and metadata of what changed since the one before it);
	// Inodes counts the entries it froze.
	Bytes    int64   `json:"bytes"`
	Inodes   int     `json:"inodes"`
	Manifest []Entry `json:"manifest"`
}

// Options configure a [Workspace].
type Options struct {
	// Keep bounds the number of checkpoints: creating one past it drops
	// the oldest. 0 keeps every one.
	Keep int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Workspace takes and restores checkpoints of a workspace's mounts. It is
// safe for concurrent use; its operations run one at a time.
type Workspace struct {
	mounts []Mount // sorted by prefix
	opts   Options

	mu    sync.Mutex
	list  []*Info // oldest first
	seq   int
	hooks []func(names []string)
	// decided is the two-phase restore whose participants are being
	// synced, to finish once they are.
	decided *twoPhase
	// steps is told each step of a two-phase restore (a test's watch).
	steps func(step string)
}

// New returns the checkpoints of a workspace of ms. It fails with
// ErrNoWritable when no mount has a tree to freeze.
func New(ms []Mount, opts Options) (*Workspace, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Keep < 0 {
		return nil, fmt.Errorf("checkpoint: keep must not be negative, got %d", opts.Keep)
	}
	w := &Workspace{mounts: slices.Clone(ms), opts: opts}
	slices.SortFunc(w.mounts, func(a, b Mount) int { return strings.Compare(a.Prefix, b.Prefix) })
	if !slices.ContainsFunc(w.mounts, func(m Mount) bool { return m.Tree != nil }) {
		return nil, ErrNoWritable
	}
	// A restore across persisted trees a crash interrupted is finished
	// or undone, before anything reads them.
	if err := w.recoverRestores(context.Background()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnfinished, err)
	}
	// The checkpoints the trees kept (persisted ones, after a restart):
	// a checkpoint some tree lacks (one that restarted empty) restores
	// the others, and says so.
	seen := map[string]*Info{}
	for _, m := range w.frozen() {
		for _, c := range m.Tree.Checkpoints() {
			if seen[c.ID] == nil {
				seen[c.ID] = &Info{ID: c.ID, Name: c.Name, Time: c.Time, Manifest: w.Manifest()}
				w.list = append(w.list, seen[c.ID])
			}
			if n, err := strconv.Atoi(strings.TrimPrefix(c.ID, "c")); err == nil && n > w.seq {
				w.seq = n
			}
		}
	}
	slices.SortStableFunc(w.list, func(a, b *Info) int { return a.Time.Compare(b.Time) })
	return w, nil
}

// Has reports whether the tree of m holds checkpoint id.
func (m *Mount) Has(id string) bool {
	return slices.ContainsFunc(m.Tree.Checkpoints(), func(c mounts.CheckpointInfo) bool { return c.ID == id })
}

// Mounts returns the workspace's mounts, sorted by prefix.
func (w *Workspace) Mounts() []Mount { return slices.Clone(w.mounts) }

// Manifest says what a checkpoint does with each mount.
func (w *Workspace) Manifest() []Entry {
	out := make([]Entry, len(w.mounts))
	for i, m := range w.mounts {
		out[i] = Entry{Prefix: m.Prefix, Type: m.Type, Source: m.Source, Commit: m.Commit, Coverage: m.coverage()}
	}
	return out
}

// OnRestore registers fn to be told the workspace paths ("/memory/a")
// a restore changed, after the workspace is released: a kernel face drops
// its caches of them.
func (w *Workspace) OnRestore(fn func(paths []string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooks = append(w.hooks, fn)
}

// frozen returns the mounts with a tree.
func (w *Workspace) frozen() []*Mount {
	var out []*Mount
	for i := range w.mounts {
		if w.mounts[i].Tree != nil {
			out = append(out, &w.mounts[i])
		}
	}
	return out
}

// freezeAll holds every mount of ms still, in prefix order (each mount
// holds what it holds in its own order: [mounts.FreezeFS]), and returns
// them frozen, and how to let them go (in the reverse order; more than
// once is fine).
func freezeAll(ms []*Mount) (map[*Mount]mounts.Frozen, func()) {
	zs := make(map[*Mount]mounts.Frozen, len(ms))
	for _, m := range ms {
		zs[m] = m.Tree.Freeze()
	}
	return zs, func() {
		for i := len(ms) - 1; i >= 0; i-- {
			zs[ms[i]].Release()
		}
	}
}

// Create takes a checkpoint of every writable layer at once, named name
// (optional, free text), and returns it; with Keep, the oldest beyond it
// are dropped.
func (w *Workspace) Create(ctx context.Context, name string) (Info, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	id := "c" + strconv.Itoa(w.seq)
	ms := w.frozen()
	frozen, release := freezeAll(ms)
	at := w.opts.Now()
	info := &Info{ID: id, Name: name, Time: at, Manifest: w.Manifest()}
	for i, m := range ms {
		ci, err := frozen[m].Checkpoint(id, name)
		if err != nil {
			for _, done := range ms[:i] {
				_ = frozen[done].DeleteCheckpoint(id)
			}
			release()
			return Info{}, fmt.Errorf("checkpoint of %s: %w", m.Prefix, err)
		}
		info.Bytes += ci.Bytes
		info.Inodes += ci.Inodes
	}
	release()
	// Durable before it is acknowledged (a persisted tree's store).
	for _, m := range ms {
		if err := m.Tree.Sync(ctx, "."); err != nil {
			return Info{}, fmt.Errorf("checkpoint of %s: %w", m.Prefix, err)
		}
	}
	w.list = append(w.list, info)
	for w.opts.Keep > 0 && len(w.list) > w.opts.Keep {
		if err := w.deleteLocked(w.list[0].ID); err != nil {
			return *info, err
		}
	}
	return *info, nil
}

// List returns the checkpoints, oldest first, with their current sizes
// (deleting one passes what a newer one needs to it).
func (w *Workspace) List() []Info {
	w.mu.Lock()
	defer w.mu.Unlock()
	sizes := map[string]mounts.CheckpointInfo{}
	for _, m := range w.frozen() {
		for _, c := range m.Tree.Checkpoints() {
			s := sizes[c.ID]
			s.Bytes += c.Bytes
			s.Inodes += c.Inodes
			sizes[c.ID] = s
		}
	}
	out := make([]Info, len(w.list))
	for i, c := range w.list {
		out[i] = *c
		out[i].Bytes, out[i].Inodes = sizes[c.ID].Bytes, sizes[c.ID].Inodes
	}
	return out
}

// Get returns checkpoint id.
func (w *Workspace) Get(id string) (Info, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, err := w.find(id)
	if err != nil {
		return Info{}, err
	}
	return *w.list[i], nil
}

func (w *Workspace) find(id string) (int, error) {
	for i, c := range w.list {
		if c.ID == id {
			return i, nil
		}
	}
	var ids []string
	for _, c := range w.list {
		ids = append(ids, c.ID)
	}
	have := "none"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return 0, fmt.Errorf("checkpoint %q: %w (have: %s)", id, ErrUnknown, have)
}

// Delete drops checkpoint id.
func (w *Workspace) Delete(ctx context.Context, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleteLocked(id)
}

func (w *Workspace) deleteLocked(id string) error {
	i, err := w.find(id)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range w.frozen() {
		if err := m.Tree.DeleteCheckpoint(id); err != nil && !errors.Is(err, mounts.ErrNoCheckpoint) {
			errs = append(errs, fmt.Errorf("%s: %w", m.Prefix, err))
		}
	}
	w.list = slices.Delete(w.list, i, i+1)
	return errors.Join(errs...)
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	// Restored are the mount prefixes brought back to the checkpoint.
	Restored []string `json:"restored"`
	// NotCovered are the mounts the restore selected but could not
	// bring back (host directories, and memory trees that lost the
	// checkpoint in a restart): they are as they were.
	NotCovered []string `json:"not_covered,omitempty"`
	// Changed are the workspace paths that changed since the checkpoint,
	// as the operations named them.
	Changed []string `json:"changed"`
	// Refused are the names a filtered restore left as they are
	// ([Workspace.RestoreFiltered]).
	Refused []Refused `json:"refused,omitempty"`
}

// Restore brings the workspace back to checkpoint id: every covered mount
// at or below paths (workspace paths; none means the whole workspace), and
// the names paths inside a mount give, as git checkout ID -- PATH does
// ([memfs.FS.RestorePathsHeld]), all at once. Mounts that are not covered
// are reported, never silently skipped. The checkpoints are
// kept: restoring a newer one undoes a restore. An unknown id changes
// nothing.
func (w *Workspace) Restore(ctx context.Context, id string, paths []string) (RestoreResult, error) {
	return w.RestoreFiltered(ctx, id, paths, nil)
}

// RestoreFiltered is [Workspace.Restore] without the names refuse refuses
// (a deny_write or read_only rule): they are left as they are, and listed
// in the result's Refused with the reason; the rest is restored, at once
// (see filter.go). A nil refuse refuses nothing, at no extra cost.
func (w *Workspace) RestoreFiltered(ctx context.Context, id string, paths []string, refuse Filter) (RestoreResult, error) {
	w.mu.Lock()
	res, err := w.restoreLocked(ctx, id, paths, refuse)
	hooks := slices.Clone(w.hooks)
	if err == nil {
		for _, m := range w.frozen() {
			if slices.Contains(res.Restored, m.Prefix) {
				if err = m.Tree.Sync(ctx, "."); err != nil {
					err = fmt.Errorf("restore of %s: %w", m.Prefix, err)
					break
				}
				if w.decided != nil && m != w.decided.coord {
					w.step("synced " + m.Prefix)
				}
			}
		}
	}
	if err == nil && w.decided != nil {
		err = w.decided.finish()
		w.step("forgotten")
	}
	w.decided = nil
	w.mu.Unlock()
	if len(res.Changed) > 0 {
		for _, h := range hooks {
			h(res.Changed)
		}
	}
	return res, err
}

func (w *Workspace) restoreLocked(ctx context.Context, id string, paths []string, refuse Filter) (RestoreResult, error) {
	res := RestoreResult{Restored: []string{}, Changed: []string{}}
	if _, err := w.find(id); err != nil {
		return res, err
	}
	sel, err := w.pick(paths)
	if err != nil {
		return res, err
	}
	var ms []*Mount
	subs := map[*Mount][]string{}
	for i := range w.mounts {
		m := &w.mounts[i]
		if _, ok := sel[m.Prefix]; !ok {
			continue
		}
		switch m.coverage() {
		case Frozen:
			if m.Has(id) {
				names := sel[m.Prefix]
				if refuse != nil {
					var refused []Refused
					if names, refused, err = w.plan(ctx, m, id, names, refuse); err != nil {
						return res, fmt.Errorf("restore of %s: %w", m.Prefix, err)
					}
					res.Refused = append(res.Refused, refused...)
					if names != nil && len(names) == 0 {
						continue // nothing let through changed
					}
				}
				ms = append(ms, m)
				subs[m] = names
			} else {
				// A tree that restarted empty lost it.
				res.NotCovered = append(res.NotCovered, m.Prefix)
			}
		case NotCovered:
			res.NotCovered = append(res.NotCovered, m.Prefix)
		}
	}
	// Two or more persisted trees: one two-phase commit across their
	// stores (see restore.go); one is a transaction of its own already.
	tpc, err := w.prepare(ctx, id, ms, subs)
	if err != nil {
		return res, err
	}
	frozen, release := freezeAll(ms)
	defer release()
	var errs []error
	aborted := false
	for _, m := range ms {
		var mark mounts.RestoreMark
		if tpc != nil {
			mark = tpc.mark(m)
		}
		names, err := frozen[m].Restore(id, subs[m], mark)
		for _, n := range names {
			res.Changed = append(res.Changed, path.Join(m.Prefix, n))
		}
		if tpc != nil && m == tpc.coord {
			// The point of no return: the decision is durable
			// before any participant's restore can be. (A restore
			// of paths that failed part way is decided too: what
			// it restored stays, as with one tree.)
			serr := m.Tree.Sync(ctx, ".")
			if !frozen[m].Decided(tpc.id) || serr != nil {
				// Not decided: nothing is restored anywhere else.
				errs = append(errs, fmt.Errorf("restore of %s: %w", m.Prefix, errors.Join(err, serr)))
				aborted = true
				break
			}
			w.step("decided")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore of %s: %w", m.Prefix, err))
			continue
		}
		res.Restored = append(res.Restored, m.Prefix)
	}
	slices.Sort(res.Changed)
	res.Changed = slices.Compact(res.Changed)
	if aborted {
		// The participants' intents go (the trees are let go of
		// first: discarding takes a tree's lock).
		release()
		tpc.abort()
		return res, errors.Join(errs...)
	}
	w.decided = tpc
	return res, errors.Join(errs...)
}

// pick selects the mounts paths name: a mount at or above a path whole
// (nil), a mount holding a path by its names in the mount.
func (w *Workspace) pick(paths []string) (map[string][]string, error) {
	sel := map[string][]string{}
	if len(paths) == 0 {
		for _, m := range w.mounts {
			sel[m.Prefix] = nil
		}
		return sel, nil
	}
	whole := map[string]bool{}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			return nil, fmt.Errorf("%w: %q: want an absolute, clean workspace path such as /memory/notes", ErrBadPath, p)
		}
		// The mount holding p is the one with the longest prefix.
		holder := ""
		for _, m := range w.mounts {
			switch {
			case p == "/" || m.Prefix == p || strings.HasPrefix(m.Prefix, p+"/"):
				sel[m.Prefix], whole[m.Prefix] = nil, true
			case (m.Prefix == "/" || strings.HasPrefix(p, m.Prefix+"/")) && len(m.Prefix) > len(holder):
				holder = m.Prefix
			}
		}
		if holder != "" && !whole[holder] {
			sel[holder] = append(sel[holder], strings.TrimPrefix(strings.TrimPrefix(p, holder), "/"))
		}
		if holder == "" && !slices.ContainsFunc(w.mounts, func(m Mount) bool {
			return whole[m.Prefix] && (p == "/" || m.Prefix == p || strings.HasPrefix(m.Prefix, p+"/"))
		}) {
			return nil, fmt.Errorf("%w: %s is in no mount of the workspace", ErrBadPath, p)
		}
	}
	for prefix := range whole {
		sel[prefix] = nil
	}
	return sel, nil
}

// View returns the mount at prefix as it was at checkpoint id, to read
// (a diff): a tree of its own, which a change does not take back to the
// workspace. It costs in the size of the mount's writable layer.
func (w *Workspace) View(ctx context.Context, id, prefix string) (mounts.FS, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.find(id); err != nil {
		return nil, err
	}
	for i := range w.mounts {
		if m := &w.mounts[i]; m.Prefix == prefix {
			return w.viewLocked(ctx, id, m)
		}
	}
	return nil, fmt.Errorf("%w: no mount at %s", ErrBadPath, prefix)
}

// viewLocked is View of m; the caller holds w.mu.
func (w *Workspace) viewLocked(ctx context.Context, id string, m *Mount) (mounts.FS, error) {
	if m.Tree == nil {
		return nil, fmt.Errorf("checkpoint %q: %s is %s", id, m.Prefix, m.coverage())
	}
	return m.Tree.CheckpointView(ctx, id)
}
