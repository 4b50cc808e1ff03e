package memfs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Checkpoints
//
// A checkpoint is the state of the tree at one instant, kept as a delta: the
// inodes that changed since the checkpoint before it, frozen as they were
// (metadata, a directory's names, a file's pages). The first checkpoint of
// a tree freezes every inode; from then on the tree marks each inode it
// changes (once per checkpoint generation) and the next checkpoint freezes
// only those, so taking one costs in what changed since the previous one,
// never in the size of the tree. The state of an inode at checkpoint k is
// the newest frozen copy at or before k.
//
// Frozen file pages are shared with the live tree, not copied: freezing a
// file marks its content shared, and the tree copies a shared page before it
// next writes into it (copy on write, one 64 KiB page at a time). Unchanged
// data is therefore held once, however many checkpoints see it.
//
// Restore rewrites, in place and under the tree lock held exclusively, the
// inodes that changed since the checkpoint; every other inode is the same
// as it was then. Readers of the tree see the state before or after, never a
// mix. A file held open keeps what it had: its handles move to a copy of the
// node, which lives, unnamed, until the last of them closes. With a store,
// the restore is one [Mutation], which a store applies at once (boltstore:
// in one transaction), so a crash leaves the tree before or after it.
//
// With a store, checkpoints are saved with the tree ([Mutation.Checkpoint],
// [Mutation.DropCheckpoint]) and come back with it ([Image.Checkpoints]);
// what changed since the newest is then found by comparing the two.
// Without one they live as long as the tree.

// ErrNoCheckpoint is wrapped by the errors for an unknown checkpoint id
// (mounts.ErrNoCheckpoint).
var ErrNoCheckpoint = mounts.ErrNoCheckpoint

// CheckpointInfo describes one checkpoint of a tree.
type CheckpointInfo = mounts.CheckpointInfo

// ckptState is the checkpoint bookkeeping of an FS.
type ckptState struct {
	// gen is the current checkpoint generation, 0 while the tree has no
	// checkpoint (nothing is tracked then). Changed only under mu held
	// exclusively; every change of the tree holds mu at least shared, so
	// gen is stable during one.
	gen   atomic.Uint64
	epoch uint64 // the last generation handed out; never reused

	// dmu guards dirty and names, added to by changes running in
	// parallel under mu shared.
	dmu sync.Mutex
	// dirty holds the inodes changed since the newest checkpoint.
	dirty map[uint64]struct{}
	// names holds the names (as given to the operations) changed since
	// the newest checkpoint, for a kernel face to drop on restore.
	names map[string]struct{}

	// index finds the named inodes by number; nil while gen is 0.
	// Guarded by mu.
	index map[uint64]*node
	// ckpts are the checkpoints, oldest first. Guarded by mu.
	ckpts []*checkpoint

	// pending and decided are the restore intent records the store
	// keeps; mark is the one the restore under way adds. Guarded by mu.
	pending *RestoreIntent
	decided []RestoreDecision
	mark    *RestoreMark
}

// checkpoint is one checkpoint: the inodes changed since the one before it.
type checkpoint struct {
	id   string
	name string
	at   time.Time
	// delta maps an inode to its frozen state; nil means it did not
	// exist at the checkpoint.
	delta map[uint64]*frozen
	// names changed between the checkpoint before and this one.
	names map[string]struct{}
	bytes int64
}

// frozen is the state of one inode at a checkpoint. It is never changed;
// its pages are shared (read-only) with the tree and other checkpoints.
type frozen struct {
	typ                 fs.FileMode
	target              string
	rdev                uint32
	perm                fs.FileMode
	uid, gid            uint32
	nlink               uint32
	atime, mtime, ctime time.Time
	xattrs              map[string][]byte
	xattrBytes          int64
	data                content
	children            map[string]uint64
}

// metaBytes is what Bytes counts for an inode's metadata.
const metaBytes = 128

// markChanged records n as changed since the newest checkpoint; the caller
// holds n.mu and f.mu at least shared. It reports whether n was not
// recorded yet.
func (f *FS) markChanged(n *node) bool {
	g := f.gen.Load()
	if g == 0 || n.mark == g {
		return false
	}
	n.mark = g
	f.dmu.Lock()
	f.dirty[n.ino] = struct{}{}
	f.dmu.Unlock()
	return true
}

// noteName records a name an operation changed.
func (f *FS) noteName(name string) {
	if f.gen.Load() == 0 {
		return
	}
	f.dmu.Lock()
	f.names[name] = struct{}{}
	f.dmu.Unlock()
}

// hold holds off every change of the tree, and every checkpoint operation,
// until release is called; reads through names wait too. A workspace holds
// all its trees at once to take one checkpoint of them all ([FS.Freeze]).
// The methods whose names end in Held need it; release once.
func (f *FS) hold() (release func()) {
	f.mu.Lock()
	var once sync.Once
	return func() { once.Do(f.mu.Unlock) }
}

// find returns the index of checkpoint id; the caller holds f.mu.
func (f *FS) find(id string) (int, error) {
	for i, c := range f.ckpts {
		if c.id == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("checkpoint %q: %w", id, ErrNoCheckpoint)
}

// Checkpoint takes a checkpoint named id (unique in the tree); see
// [FS.checkpointHeld].
func (f *FS) Checkpoint(id string) (CheckpointInfo, error) {
	_ = f.LoadAll(context.Background(), 8)
	release := f.hold()
	info, err := f.checkpointHeld(id, "")
	release()
	if err == nil {
		err = f.sync("checkpoint", ".")
	}
	return info, err
}

// checkpointHeld takes a checkpoint with id (unique in the tree) and name
// (free text) of the tree, which the caller holds ([FS.hold]). It costs in
// the inodes changed since the previous checkpoint; the first one walks the
// whole tree. With a store, the checkpoint is saved too
// ([Mutation.Checkpoint]).
func (f *FS) checkpointHeld(id, name string) (CheckpointInfo, error) {
	if id == "" {
		return CheckpointInfo{}, fmt.Errorf("checkpoint: %w: empty id", fs.ErrInvalid)
	}
	if _, err := f.find(id); err == nil {
		return CheckpointInfo{}, fmt.Errorf("checkpoint %q: %w", id, fs.ErrExist)
	}
	if err := f.lazyErr(); err != nil {
		return CheckpointInfo{}, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	c := &checkpoint{id: id, name: name, at: f.now(), delta: map[uint64]*frozen{}}
	if f.gen.Load() == 0 {
		f.index = map[uint64]*node{}
		queue := []*node{f.root}
		f.index[1] = f.root
		for len(queue) > 0 {
			dir := queue[0]
			queue = queue[1:]
			for _, child := range dir.children {
				if _, seen := f.index[child.ino]; seen {
					continue
				}
				f.index[child.ino] = child
				if child.isDir() {
					queue = append(queue, child)
				}
			}
		}
		for ino, n := range f.index {
			c.delta[ino] = c.freeze(n)
		}
	} else {
		for ino := range f.dirty {
			if n, ok := f.index[ino]; ok {
				c.delta[ino] = c.freeze(n)
			} else {
				c.delta[ino] = nil
				c.bytes += metaBytes
			}
		}
		c.names = f.names
	}
	f.ckpts = append(f.ckpts, c)
	f.epoch++
	f.gen.Store(f.epoch)
	f.dirty, f.names = map[uint64]struct{}{}, map[string]struct{}{}
	if f.store != nil {
		if err := f.store.Commit(&Mutation{Op: "checkpoint", Checkpoint: c.record()}); err != nil {
			f.log.Error("memfs: store commit failed", "op", "checkpoint", "checkpoint", id, "err", err)
			return c.info(), fmt.Errorf("checkpoint %q: saving it: %w", id, err)
		}
	}
	return c.info(), nil
}

// record is the checkpoint as a store keeps it.
func (c *checkpoint) record() *CheckpointRecord {
	r := &CheckpointRecord{ID: c.id, Name: c.name, Time: c.at, Names: slices.Sorted(maps.Keys(c.names))}
	for ino, s := range c.delta {
		if s == nil {
			r.Absent = append(r.Absent, ino)
			continue
		}
		r.Inodes = append(r.Inodes, s.record(ino))
		for name, child := range s.children {
			r.Entries = append(r.Entries, EntryRecord{Dir: ino, Name: name, Ino: child})
		}
	}
	return r
}

// record is s's metadata as a store keeps it.
func (s *frozen) record(ino uint64) InodeRecord {
	r := InodeRecord{
		Ino: ino, Mode: s.typ | s.perm, Uid: s.uid, Gid: s.gid, Nlink: s.nlink, Size: s.data.size,
		Atime: s.atime, Mtime: s.mtime, Ctime: s.ctime, Target: s.target, Rdev: s.rdev, Xattrs: s.xattrs,
	}
	if s.typ == fs.ModeSymlink {
		r.Size = int64(len(s.target))
	}
	return r
}

func (c *checkpoint) info() CheckpointInfo {
	return CheckpointInfo{ID: c.id, Name: c.name, Time: c.at, Inodes: len(c.delta), Bytes: c.bytes}
}

// freeze copies n's state into the checkpoint, sharing its pages.
func (c *checkpoint) freeze(n *node) *frozen {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := &frozen{
		typ: n.typ, target: n.target, rdev: n.rdev, perm: n.perm, uid: n.uid, gid: n.gid,
		nlink: n.nlink, atime: n.atime, mtime: n.mtime, ctime: n.ctime,
		xattrs: maps.Clone(n.xattrs), xattrBytes: n.xattrBytes,
	}
	c.bytes += metaBytes + n.xattrBytes + int64(len(n.target))
	switch {
	case n.isDir():
		s.children = make(map[string]uint64, len(n.children))
		for name, child := range n.children {
			s.children[name] = child.ino
			c.bytes += int64(len(name)) + 16
		}
	case n.typ == 0:
		d := &n.data
		if !d.shared {
			c.bytes += d.alloc
		} else {
			for idx := range d.owned {
				c.bytes += int64(len(d.pages[idx]))
			}
		}
		s.data = content{pages: maps.Clone(d.pages), size: d.size, alloc: d.alloc, blocks: d.blocks}
		d.shared, d.owned = true, nil
	}
	return s
}

// stateAt is inode ino at checkpoint k: nil when it did not exist. The
// caller holds f.mu.
func (f *FS) stateAt(k int, ino uint64) *frozen {
	for j := k; j >= 0; j-- {
		if s, ok := f.ckpts[j].delta[ino]; ok {
			return s
		}
	}
	return nil
}

// Checkpoints lists the checkpoints, oldest first.
func (f *FS) Checkpoints() []CheckpointInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]CheckpointInfo, len(f.ckpts))
	for i, c := range f.ckpts {
		out[i] = c.info()
	}
	return out
}

// ChangedSince lists the names changed since checkpoint id, as the
// operations were given them (sorted, and may name what no longer exists).
func (f *FS) ChangedSince(id string) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, err := f.find(id)
	if err != nil {
		return nil, err
	}
	return f.namesSince(k), nil
}

// namesSince is the names changed after checkpoint k; the caller holds f.mu.
func (f *FS) namesSince(k int) []string {
	set := map[string]struct{}{}
	for _, c := range f.ckpts[k+1:] {
		maps.Copy(set, c.names)
	}
	f.dmu.Lock()
	maps.Copy(set, f.names)
	f.dmu.Unlock()
	return slices.Sorted(maps.Keys(set))
}

// DeleteCheckpoint drops checkpoint id. What it froze that a newer one
// needs (the state of an inode that did not change again before the next
// checkpoint) passes to that one.
func (f *FS) DeleteCheckpoint(id string) error {
	release := f.hold()
	defer release()
	return f.deleteCheckpointHeld(id)
}

// deleteCheckpointHeld is DeleteCheckpoint of a held tree.
func (f *FS) deleteCheckpointHeld(id string) error {
	k, err := f.find(id)
	if err != nil {
		return err
	}
	c := f.ckpts[k]
	switch {
	case len(f.ckpts) == 1:
		// Nothing left to track for.
		f.gen.Store(0)
		f.index, f.dirty, f.names = nil, nil, nil
	case k == len(f.ckpts)-1:
		// The newest: its changes are changes since the one before.
		for ino := range c.delta {
			f.dirty[ino] = struct{}{}
		}
		maps.Copy(f.names, c.names)
	default:
		next := f.ckpts[k+1]
		for ino, s := range c.delta {
			if _, ok := next.delta[ino]; ok || (s == nil && k == 0) {
				continue
			}
			next.delta[ino] = s
		}
		if next.names == nil {
			next.names = map[string]struct{}{}
		}
		maps.Copy(next.names, c.names)
		next.bytes += c.bytes
	}
	f.ckpts = slices.Delete(f.ckpts, k, k+1)
	if f.store != nil {
		drop := &CheckpointDrop{ID: id, Oldest: k == 0}
		if k < len(f.ckpts) {
			drop.Into = f.ckpts[k].id
		}
		if err := f.store.Commit(&Mutation{Op: "checkpoint delete", DropCheckpoint: drop}); err != nil {
			f.log.Error("memfs: store commit failed", "op", "checkpoint delete", "checkpoint", id, "err", err)
			return fmt.Errorf("checkpoint %q: deleting it from the store: %w", id, err)
		}
	}
	return nil
}

// RestoreCheckpoint brings the tree back to checkpoint id; see
// [FS.restoreHeld].
func (f *FS) RestoreCheckpoint(id string) ([]string, error) {
	release := f.hold()
	names, err := f.restoreHeld(id)
	release()
	if err == nil {
		err = f.sync("restore", ".")
	}
	return names, err
}

// restoreHeld brings the held tree back to its state at checkpoint id, and
// returns the names changed since (as the operations were given them: the
// kernel face drops its caches of them). The checkpoints are kept, id and
// the newer ones too: a restore can itself be undone by restoring a newer
// checkpoint. It costs in what changed since the checkpoint, not in the
// size of the tree. An unknown id changes nothing.
func (f *FS) restoreHeld(id string) ([]string, error) {
	k, err := f.find(id)
	if err != nil {
		return nil, err
	}
	names := f.namesSince(k)
	affected := maps.Clone(f.dirty)
	for _, c := range f.ckpts[k+1:] {
		for ino := range c.delta {
			affected[ino] = struct{}{}
		}
	}
	var j *journal
	if f.store != nil {
		j = &journal{m: Mutation{Op: "restore"}, f: f, rec: true}
	}
	// First the nodes: rewritten in place, made again, or dropped.
	nodes := make(map[uint64]*node, len(affected))
	var gone, replaced []*node
	for ino := range affected {
		s := f.stateAt(k, ino)
		live := f.index[ino]
		if live != nil && s != nil && (live.typ != s.typ || live.target != s.target || live.rdev != s.rdev) {
			// Not the same inode (a number reused across a restart):
			// the live one goes, the checkpoint's is made again under
			// the number, which the store then knows as the latter.
			replaced = append(replaced, live)
			delete(f.index, ino)
			live = nil
		}
		switch {
		case s == nil && live != nil:
			gone = append(gone, live)
		case s == nil:
		case live != nil:
			f.assign(live, s)
			nodes[ino] = live
		default:
			n := &node{ino: ino, typ: s.typ, target: s.target, rdev: s.rdev}
			f.usedFiles.Add(1)
			f.usedBytes.Add(int64(len(s.target)))
			f.assign(n, s)
			nodes[ino] = n
			f.index[ino] = n
		}
	}
	// Then the names of the directories among them.
	for ino, n := range nodes {
		s := f.stateAt(k, ino)
		if !n.isDir() {
			continue
		}
		if j != nil {
			for name := range n.children {
				j.m.Entries = append(j.m.Entries, EntryRecord{Dir: ino, Name: name})
			}
		}
		n.children = make(map[string]*node, len(s.children))
		for name, cino := range s.children {
			child := nodes[cino]
			if child == nil {
				child = f.index[cino]
			}
			if child == nil {
				// A checkpoint is one consistent tree: this cannot be.
				panic(fmt.Sprintf("memfs: restore of %q: entry %q names inode %d, which is nowhere", id, name, cino))
			}
			n.children[name] = child
			if j != nil {
				j.m.Entries = append(j.m.Entries, EntryRecord{Dir: ino, Name: name, Ino: cino})
			}
		}
	}
	for _, n := range gone {
		n.mu.Lock()
		n.nlink = 0
		delete(f.index, n.ino)
		j.inode(n)
		f.release(j, n)
		n.mu.Unlock()
	}
	for _, n := range replaced {
		n.mu.Lock()
		n.nlink = 0
		n.ghost = true // its number is the restored inode's now
		f.release(nil, n)
		n.mu.Unlock()
	}
	if j != nil {
		for ino, n := range nodes {
			n.mu.RLock()
			j.recordInode(n)
			if n.typ == 0 {
				j.m.Cleared = append(j.m.Cleared, ino)
				for idx, page := range n.data.pages {
					j.m.Writes = append(j.m.Writes, WriteRecord{Ino: ino, Off: idx * pageSize, Data: slices.Clone(page)})
				}
			}
			n.mu.RUnlock()
		}
		f.marked(&j.m)
		if err := f.store.Commit(&j.m); err != nil {
			f.log.Error("memfs: store commit failed", "op", "restore", "checkpoint", id, "err", err)
			return names, fmt.Errorf("restore of checkpoint %q: %w", id, err)
		}
		f.markDone(&j.m)
	}
	// The tree is checkpoint k's now: what can differ from the newest
	// checkpoint is what the newer ones froze (nothing when k is the
	// newest). A new generation makes every node's mark stale, so the
	// next change of any node is recorded again.
	f.epoch++
	f.gen.Store(f.epoch)
	f.dirty, f.names = map[uint64]struct{}{}, map[string]struct{}{}
	for _, c := range f.ckpts[k+1:] {
		for ino := range c.delta {
			f.dirty[ino] = struct{}{}
		}
		maps.Copy(f.names, c.names)
	}
	return names, nil
}

// assign gives n the state s, charging the usage counters. A regular file
// held open keeps what it had: its handles move to a copy of the node,
// unnamed, which takes the old content's charge with it until it is
// released. The caller holds f.mu exclusively.
func (f *FS) assign(n *node, s *frozen) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.data.alloc + n.xattrBytes
	if n.opens > 0 {
		g := &node{
			ino: n.ino, typ: n.typ, target: n.target, rdev: n.rdev, perm: n.perm, uid: n.uid, gid: n.gid,
			atime: n.atime, mtime: n.mtime, ctime: n.ctime, xattrs: n.xattrs, xattrBytes: n.xattrBytes,
			data: n.data, opens: n.opens, handles: n.handles, mark: n.mark, ghost: true,
		}
		for h := range g.handles {
			h.n.Store(g)
		}
		n.opens, n.handles = 0, nil
		f.usedFiles.Add(1)
		old = 0
	}
	n.perm, n.uid, n.gid, n.nlink = s.perm, s.uid, s.gid, s.nlink
	n.atime, n.mtime, n.ctime = s.atime, s.mtime, s.ctime
	n.xattrs, n.xattrBytes = maps.Clone(s.xattrs), s.xattrBytes
	if n.typ == 0 {
		n.data = content{pages: maps.Clone(s.data.pages), size: s.data.size, alloc: s.data.alloc, blocks: s.data.blocks, shared: true}
	}
	n.freed = false
	f.usedBytes.Add(n.data.alloc + n.xattrBytes - old)
}

// CheckpointView is [FS.checkpointView] as the freezing capability has it
// ([mounts.FreezeFS]).
func (f *FS) CheckpointView(_ context.Context, id string) (mounts.FS, error) {
	v, err := f.checkpointView(id)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// checkpointView returns a tree of its own holding checkpoint id, for
// reading it (a diff). It shares the checkpoint's pages; a change to it
// changes neither the checkpoint nor f. It costs in the size of the tree.
func (f *FS) checkpointView(id string) (*FS, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, err := f.find(id)
	if err != nil {
		return nil, err
	}
	v := New(Options{Uid: f.uid, Gid: f.gid, Now: f.now, Logger: f.log})
	nodes := map[uint64]*node{}
	make1 := func(ino uint64, s *frozen) *node {
		n := &node{
			ino: ino, typ: s.typ, target: s.target, rdev: s.rdev, perm: s.perm, uid: s.uid, gid: s.gid,
			nlink: s.nlink, atime: s.atime, mtime: s.mtime, ctime: s.ctime,
			xattrs: maps.Clone(s.xattrs), xattrBytes: s.xattrBytes,
		}
		if s.typ == 0 {
			n.data = content{pages: maps.Clone(s.data.pages), size: s.data.size, alloc: s.data.alloc, blocks: s.data.blocks, shared: true}
		}
		nodes[ino] = n
		v.nextIno = max(v.nextIno, ino+1)
		return n
	}
	rs := f.stateAt(k, 1)
	v.root = make1(1, rs)
	type item struct {
		n *node
		s *frozen
	}
	queue := []item{{v.root, rs}}
	var files, bytes int64
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		it.n.children = make(map[string]*node, len(it.s.children))
		for name, cino := range it.s.children {
			child, seen := nodes[cino]
			if !seen {
				cs := f.stateAt(k, cino)
				if cs == nil {
					return nil, fmt.Errorf("checkpoint %q: entry %q names inode %d, which it lacks: %w", id, name, cino, ErrBadImage)
				}
				child = make1(cino, cs)
				files++
				bytes += child.data.alloc + child.xattrBytes + int64(len(child.target))
				if child.isDir() {
					queue = append(queue, item{child, cs})
				}
			}
			it.n.children[name] = child
		}
	}
	v.usedFiles.Store(files)
	v.usedBytes.Store(bytes)
	return v, nil
}

// loadCheckpoints rebuilds the checkpoints a store saved, for [Restore],
// and turns tracking on: what differs between the tree and the newest
// checkpoint is found by comparing them (a restart loses the record of
// what changed since), and the data they share is shared again.
func (f *FS) loadCheckpoints(imgs []CheckpointImage) error {
	for i := range imgs {
		img := &imgs[i]
		c := &checkpoint{id: img.ID, name: img.Name, at: img.Time, delta: map[uint64]*frozen{}, names: map[string]struct{}{}}
		for _, n := range img.Names {
			c.names[n] = struct{}{}
		}
		for _, ino := range img.Absent {
			c.delta[ino] = nil
			c.bytes += metaBytes
		}
		for j := range img.Inodes {
			r := &img.Inodes[j]
			n, err := nodeOf(r)
			if err != nil {
				return fmt.Errorf("checkpoint %q: %w", img.ID, err)
			}
			s := &frozen{
				typ: n.typ, target: n.target, rdev: n.rdev, perm: n.perm, uid: n.uid, gid: n.gid,
				nlink: r.Nlink, atime: n.atime, mtime: n.mtime, ctime: n.ctime,
				xattrs: n.xattrs, xattrBytes: n.xattrBytes, data: content{size: n.data.size},
			}
			if s.typ == fs.ModeDir {
				s.children = map[string]uint64{}
			}
			c.delta[r.Ino] = s
			c.bytes += metaBytes + s.xattrBytes + int64(len(s.target))
		}
		for _, e := range img.Entries {
			s := c.delta[e.Dir]
			if s == nil || s.children == nil || !validName(e.Name) {
				return fmt.Errorf("%w: checkpoint %q: entry %q in inode %d, not a directory it froze", ErrBadImage, img.ID, e.Name, e.Dir)
			}
			s.children[e.Name] = e.Ino
			c.bytes += int64(len(e.Name)) + 16
		}
		if img.Content != nil {
			err := img.Content(func(w WriteRecord) error {
				s := c.delta[w.Ino]
				switch {
				case s == nil || s.typ != 0:
					return fmt.Errorf("%w: checkpoint %q: content for inode %d, not a file it froze", ErrBadImage, img.ID, w.Ino)
				case w.Off < 0 || w.Off%pageSize != 0 || len(w.Data) > pageSize || w.Off > s.data.size-int64(len(w.Data)):
					return fmt.Errorf("%w: checkpoint %q: content of inode %d out of place", ErrBadImage, img.ID, w.Ino)
				}
				if s.data.pages == nil {
					s.data.pages = map[int64][]byte{}
				}
				s.data.pages[w.Off/pageSize] = w.Data
				s.data.alloc += int64(len(w.Data))
				s.data.blocks += blocksOf(len(w.Data))
				return nil
			})
			if err != nil {
				return err
			}
		}
		f.ckpts = append(f.ckpts, c)
	}
	// Every inode of the tree and of the checkpoints is in the chain:
	// the first checkpoint froze the whole tree.
	if f.stateAt(0, 1) == nil {
		return fmt.Errorf("%w: the first checkpoint does not hold the root", ErrBadImage)
	}
	// The sizes: the bytes a checkpoint holds are its pages not shared
	// with the checkpoint before.
	for k, c := range f.ckpts {
		for ino, s := range c.delta {
			if s == nil || s.typ != 0 {
				continue
			}
			var prev *frozen
			if k > 0 {
				prev = f.stateAt(k-1, ino)
			}
			for idx, page := range s.data.pages {
				if prev == nil || !samePage(prev.data.pages[idx], page) {
					c.bytes += int64(len(page))
				}
			}
		}
	}
	// Numbers the checkpoints hold are never handed out again: a new
	// inode must not be taken for one of theirs.
	for _, c := range f.ckpts {
		for ino := range c.delta {
			f.nextIno = max(f.nextIno, ino+1)
		}
	}
	f.index = map[uint64]*node{1: f.root}
	paths := map[uint64]string{1: "."}
	queue := []*node{f.root}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for name, child := range dir.children {
			if _, seen := f.index[child.ino]; seen {
				continue
			}
			f.index[child.ino] = child
			paths[child.ino] = joinName(paths[dir.ino], name)
			if child.isDir() {
				queue = append(queue, child)
			}
		}
	}
	f.epoch++
	f.gen.Store(f.epoch)
	f.dirty, f.names = map[uint64]struct{}{}, map[string]struct{}{}
	newest := len(f.ckpts) - 1
	known := map[uint64]struct{}{}
	for _, c := range f.ckpts {
		for ino := range c.delta {
			known[ino] = struct{}{}
		}
	}
	for ino, n := range f.index {
		if !f.same(n, f.stateAt(newest, ino)) {
			f.dirty[ino] = struct{}{}
		}
		delete(known, ino)
	}
	for ino := range known {
		if f.stateAt(newest, ino) != nil {
			f.dirty[ino] = struct{}{} // in the checkpoint, gone now
		}
	}
	// What changed before the restart was named by operations this
	// process never saw: name the changed inodes by where they are now,
	// and the entries of changed directories, now and at the
	// checkpoint, so a restore drops every cache it makes stale. (A name
	// gone now is an entry of a changed directory.)
	for ino := range f.dirty {
		p, ok := paths[ino]
		if !ok {
			continue
		}
		f.names[p] = struct{}{}
		if n := f.index[ino]; n.isDir() {
			for name := range n.children {
				f.names[joinName(p, name)] = struct{}{}
			}
		}
		if s := f.stateAt(newest, ino); s != nil {
			for name := range s.children {
				f.names[joinName(p, name)] = struct{}{}
			}
		}
	}
	return nil
}

func joinName(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// samePage reports whether two pages are one slice.
func samePage(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// same reports whether node n is in state s; equal pages are made one, so
// the tree and the checkpoint share them again.
func (f *FS) same(n *node, s *frozen) bool {
	if s == nil || n.typ != s.typ || n.target != s.target || n.rdev != s.rdev || n.perm != s.perm ||
		n.uid != s.uid || n.gid != s.gid || n.nlink != s.nlink ||
		!n.atime.Equal(s.atime) || !n.mtime.Equal(s.mtime) || !n.ctime.Equal(s.ctime) ||
		!maps.EqualFunc(n.xattrs, s.xattrs, bytes.Equal) {
		return false
	}
	switch n.typ {
	case fs.ModeDir:
		if len(n.children) != len(s.children) {
			return false
		}
		for name, child := range n.children {
			if s.children[name] != child.ino {
				return false
			}
		}
	case 0:
		if n.data.size != s.data.size || len(n.data.pages) != len(s.data.pages) {
			return false
		}
		equal := true
		for idx, page := range n.data.pages {
			if fp, ok := s.data.pages[idx]; !ok || !bytes.Equal(page, fp) {
				equal = false
			} else {
				n.data.pages[idx] = fp
			}
		}
		n.data.shared, n.data.owned = true, nil
		return equal
	}
	return true
}

// restorePathsHeld brings names (and everything below them) of the held
// tree back to checkpoint id, as git checkout ID -- NAME does, leaving the
// rest of the tree as it is; "." is the whole tree ([FS.restoreHeld]). A
// name the checkpoint lacks is removed; a name it has is made again, with
// the parent directories it needs (as they were at the checkpoint, holding
// only what is restored), from the checkpoint's state: new inodes, so a
// file held open keeps what it had, and a hard link to a file outside the
// names becomes a file of its own. All names are restored at once, as one
// store mutation. It returns the names that changed.
func (f *FS) restorePathsHeld(id string, names []string) ([]string, error) {
	k, err := f.find(id)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !validPath(name) {
			return nil, fmt.Errorf("restore of checkpoint %q: %w: %q", id, fs.ErrInvalid, name)
		}
		if name == "." {
			return f.restoreHeld(id)
		}
	}
	j := &journal{m: Mutation{Op: "restore"}, f: f, rec: f.store != nil}
	changed := map[string]struct{}{}
	now := f.now()
	var failed error
	for _, name := range names {
		if err := f.restorePath(j, k, name, now, changed); err != nil {
			// What is restored so far stays, and is recorded.
			failed = fmt.Errorf("restore of %q to checkpoint %q: %w", name, id, err)
			break
		}
	}
	out := slices.Sorted(maps.Keys(changed))
	for _, n := range out {
		f.noteName(n)
	}
	if j.rec {
		f.marked(&j.m)
		if err := f.store.Commit(&j.m); err != nil {
			f.log.Error("memfs: store commit failed", "op", "restore", "checkpoint", id, "err", err)
			return out, fmt.Errorf("restore of checkpoint %q: %w", id, err)
		}
		f.markDone(&j.m)
	}
	return out, failed
}

func validPath(name string) bool { return mounts.ValidPath(name) }

// stateNamed walks name through checkpoint k's directories: the inode and
// state there, 0 and nil when it has none; dirs are the directories on the
// way (their inode and state), the root first.
func (f *FS) stateNamed(k int, name string) (ino uint64, s *frozen, dirs []uint64) {
	ino, s = 1, f.stateAt(k, 1)
	for rest := name; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, "/")
		if s == nil || s.children == nil {
			return 0, nil, dirs
		}
		dirs = append(dirs, ino)
		next, ok := s.children[elem]
		if !ok {
			return 0, nil, dirs
		}
		ino, s = next, f.stateAt(k, next)
	}
	return ino, s, dirs
}

// restorePath restores one name; the caller holds f.mu exclusively.
func (f *FS) restorePath(j *journal, k int, name string, now time.Time, changed map[string]struct{}) error {
	tino, target, dirs := f.stateNamed(k, name)
	// The live parent, made as the checkpoint had it where it is missing.
	elems := strings.Split(name, "/")
	dir := f.root
	for i, elem := range elems[:len(elems)-1] {
		child, ok := dir.children[elem]
		switch {
		case ok && child.isDir():
			dir = child
			continue
		case ok:
			return fmt.Errorf("%w: %s is not a directory now", mounts.ErrNotDir, strings.Join(elems[:i+1], "/"))
		case target == nil:
			return nil // nothing there now, nothing there then
		}
		s := f.stateAt(k, dirs[i+1])
		n := f.copyNode(j, s, now)
		n.nlink = 2
		f.link(j, dir, elem, n, now)
		changed[strings.Join(elems[:i+1], "/")] = struct{}{}
		dir = n
	}
	base := elems[len(elems)-1]
	if old, ok := dir.children[base]; ok {
		f.forget(name, old, changed)
		delete(dir.children, base)
		j.entry(dir, base, nil)
		delta := 0
		if old.isDir() {
			delta = -1
		}
		f.touch(j, dir, delta, now, true)
		f.dropTree(j, old, now)
	}
	if target == nil {
		changed[name] = struct{}{}
		return nil
	}
	// The checkpoint's subtree, as new inodes.
	made := map[uint64]*node{}
	var build func(ino uint64, s *frozen, at string) *node
	build = func(ino uint64, s *frozen, at string) *node {
		if n, ok := made[ino]; ok { // a hard link inside the names
			n.mu.Lock()
			n.nlink++
			n.mu.Unlock()
			return n
		}
		n := f.copyNode(j, s, now)
		made[ino] = n
		changed[at] = struct{}{}
		if n.isDir() {
			n.nlink = 2
			for cname, cino := range s.children {
				cs := f.stateAt(k, cino)
				if cs == nil {
					continue
				}
				child := build(cino, cs, at+"/"+cname)
				if child.isDir() {
					n.nlink++
				}
				n.children[cname] = child
				j.entry(n, cname, child)
			}
		}
		return n
	}
	n := build(tino, target, name)
	f.link(j, dir, base, n, now)
	for _, m := range made {
		m.mu.Lock()
		j.inode(m)
		m.mu.Unlock()
	}
	return nil
}

// copyNode makes a new inode in state s (without names), charging it;
// the caller holds f.mu exclusively.
func (f *FS) copyNode(j *journal, s *frozen, now time.Time) *node {
	n := &node{
		ino: f.nextIno, typ: s.typ, target: s.target, rdev: s.rdev, perm: s.perm, uid: s.uid, gid: s.gid,
		nlink: 1, atime: s.atime, mtime: s.mtime, ctime: now,
		xattrs: maps.Clone(s.xattrs), xattrBytes: s.xattrBytes,
	}
	f.nextIno++
	switch n.typ {
	case fs.ModeDir:
		n.children = map[string]*node{}
	case 0:
		n.data = content{pages: maps.Clone(s.data.pages), size: s.data.size, alloc: s.data.alloc, blocks: s.data.blocks, shared: true}
		if j.rec {
			for idx, page := range n.data.pages {
				j.m.Writes = append(j.m.Writes, WriteRecord{Ino: n.ino, Off: idx * pageSize, Data: slices.Clone(page)})
			}
		}
	}
	f.usedFiles.Add(1)
	f.usedBytes.Add(n.data.alloc + n.xattrBytes + int64(len(n.target)))
	if f.index != nil {
		f.index[n.ino] = n
	}
	return n
}

// link names n base in dir; the caller holds f.mu exclusively.
func (f *FS) link(j *journal, dir *node, base string, n *node, now time.Time) {
	dir.children[base] = n
	j.entry(dir, base, n)
	delta := 0
	if n.isDir() {
		delta = 1
	}
	f.touch(j, dir, delta, now, true)
	n.mu.Lock()
	j.inode(n)
	n.mu.Unlock()
}

// dropTree takes one name away from n and, for a directory, every name
// below it; the caller holds f.mu exclusively and removed the entry.
func (f *FS) dropTree(j *journal, n *node, now time.Time) {
	if n.isDir() {
		for name, child := range n.children {
			delete(n.children, name)
			j.entry(n, name, nil)
			f.dropTree(j, child, now)
		}
	}
	f.drop(j, n, now)
}

// forget notes every name at and below name, which a restore replaces.
func (f *FS) forget(name string, n *node, changed map[string]struct{}) {
	changed[name] = struct{}{}
	for cname, child := range n.children {
		f.forget(name+"/"+cname, child, changed)
	}
}
