package memfs

import (
	"context"
	"io/fs"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Store is the hook a persistent memory mount plugs into. When
// Options.Store is set, the tree hands it one [Mutation] per successful
// change, in the order the changes took effect, before the operation
// returns to its caller. A store that makes each Commit durable before
// returning therefore never loses a change that was acknowledged.
//
// The records are physical, not logical: they name inodes and carry the
// state after the change (full metadata, directory entries, written bytes),
// so replaying them needs none of the tree's rules and a replay of a prefix
// of the journal is a tree that existed.
//
// Commit is called with the tree's locks held, so the journal order is the
// order of effect; it must not call back into the FS. It is called from many
// goroutines at once for changes to different files (writes to different
// files do not serialise in the tree, and need not in the store).
//
// If Commit fails, the operation returns that error wrapped in a
// *fs.PathError, but the in-memory tree keeps the change: the tree stays
// consistent, and the store is behind by one change that was never
// acknowledged. A store that cannot recover from that should refuse every
// later Commit as well.
//
// The root (inode 1) is created by New without a record; its first record
// comes with its first change. A store without one uses New's root.
//
// The default is no store: the tree lives and dies with the process. A
// persistent store loads a saved tree back with [Restore], which rebuilds
// the nodes from the records, keeping their inode numbers.
type Store interface {
	Commit(m *Mutation) error
}

// Syncer is a [Store] that may acknowledge a Commit before it is durable
// (one that batches commits into fewer disk flushes). The tree calls Sync
// where POSIX promises durability: on [mounts.WritableFile.Sync] (fsync and
// fdatasync through the kernel), and when a handle that changed its file is
// closed. Sync returns once every Commit made before the call is durable.
// Like Commit, it must not call back into the FS; unlike Commit, it is
// called with no lock of the tree held.
type Syncer interface {
	Store
	Sync() error
}

// Mutation is one change of the tree. A store applies its parts in field
// order: Cleared, then Writes, then Inodes, then Entries, then Freed.
type Mutation struct {
	// Cleared lists regular files whose whole content is replaced: a
	// store drops what it keeps of them before it applies the rest (a
	// checkpoint restore, which then writes their content again).
	Cleared []uint64
	// Op is the verb that made the change ("write", "rename", ...), for
	// logs and debugging; replay does not need it.
	Op string
	// Writes are bytes written into regular files.
	Writes []WriteRecord
	// Inodes holds the metadata after the change of every inode created
	// or changed. A store that keeps content must cut it to Size: this is
	// how truncation is recorded.
	Inodes []InodeRecord
	// Entries are directory entries added, replaced or removed.
	Entries []EntryRecord
	// Freed lists inodes with no name and no open handle left. Their
	// metadata and content may be dropped. An inode whose Nlink reached 0
	// but is not yet freed is still open; after a restart it is garbage.
	Freed []uint64

	// Checkpoint, when set, saves a checkpoint (see [CheckpointRecord]);
	// DropCheckpoint, when set, deletes one. A mutation that carries
	// either carries nothing else. A store that keeps no checkpoints
	// ignores both; one that does gives the checkpoints back to [Restore]
	// through [Image.Checkpoints].
	Checkpoint     *CheckpointRecord
	DropCheckpoint *CheckpointDrop
}

// CheckpointRecord is one checkpoint as a store keeps it: the inodes that
// changed since the previous checkpoint (every inode for the first), as
// they are at the checkpoint. The content of the regular files among them
// is not in the record: it is what the store holds for them when it
// applies the record, since it applies mutations in order. Unchanged data
// need not be stored twice: a store may share it between checkpoints.
type CheckpointRecord struct {
	ID, Name string
	Time     time.Time
	// Inodes are the frozen inodes' metadata.
	Inodes []InodeRecord
	// Entries are every name of the frozen directories.
	Entries []EntryRecord
	// Absent are inodes that did not exist at the checkpoint but did at
	// the one before.
	Absent []uint64
	// Names are the names changed since the checkpoint before, as the
	// operations gave them: what a restore across this checkpoint tells
	// a kernel face to forget. Dropping a checkpoint passes them on to
	// Into with the rest.
	Names []string
}

// CheckpointDrop deletes checkpoint ID. What it holds that the next
// checkpoint Into needs (the inodes Into does not record itself) passes to
// Into; the rest is dropped, and so are its Absent inodes when Oldest
// (nothing older needs saying that they are gone). Into is "" when ID is
// the newest.
type CheckpointDrop struct {
	ID, Into string
	Oldest   bool
}

// InodeRecord is the full metadata of one inode.
type InodeRecord struct {
	Ino uint64
	// Mode holds the type and permission bits.
	Mode     fs.FileMode
	Uid, Gid uint32
	Nlink    uint32
	Size     int64
	Atime    time.Time
	Mtime    time.Time
	Ctime    time.Time
	Target   string            // symlink target
	Rdev     uint32            // device number of a device
	Xattrs   map[string][]byte // complete set, owned by the record
}

// EntryRecord binds Name in directory Dir to inode Ino; Ino 0 removes the
// name. The root directory is inode 1.
type EntryRecord struct {
	Dir  uint64
	Name string
	Ino  uint64
}

// WriteRecord is Data written at Off into inode Ino. Data is owned by the
// record.
type WriteRecord struct {
	Ino  uint64
	Off  int64
	Data []byte
}

// journal collects the records of one operation. A nil journal (no store)
// records nothing, so the tree pays nothing without persistence.
//
// Once a checkpoint was taken, a journal also marks the nodes it records as
// changed since the last checkpoint, and notes the operation's names.
type journal struct {
	m Mutation
	f *FS
	// rec: there is a store to give the records to.
	rec bool
	// note: the operation changed names, or a node for the first time
	// since the last checkpoint; commit notes its name.
	note bool
}

func (f *FS) journal(op string) *journal {
	if f.store == nil && f.gen.Load() == 0 {
		return nil
	}
	return &journal{m: Mutation{Op: op}, f: f, rec: f.store != nil}
}

// inode records n's current metadata; the caller holds n.mu.
func (j *journal) inode(n *node) {
	if j == nil {
		return
	}
	if j.f.markChanged(n) {
		j.note = true
	}
	if j.rec {
		j.recordInode(n)
	}
}

// recordInode adds n's metadata to the records; the caller holds n.mu.
func (j *journal) recordInode(n *node) {
	r := InodeRecord{
		Ino: n.ino, Mode: n.typ | n.perm, Uid: n.uid, Gid: n.gid, Nlink: n.nlink,
		Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime, Target: n.target,
		Size: n.data.size, Rdev: n.rdev,
	}
	if n.typ == fs.ModeSymlink {
		r.Size = int64(len(n.target))
	}
	if len(n.xattrs) > 0 {
		r.Xattrs = make(map[string][]byte, len(n.xattrs))
		for k, v := range n.xattrs {
			r.Xattrs[k] = append([]byte(nil), v...)
		}
	}
	for i := range j.m.Inodes {
		if j.m.Inodes[i].Ino == n.ino {
			j.m.Inodes[i] = r
			return
		}
	}
	j.m.Inodes = append(j.m.Inodes, r)
}

func (j *journal) entry(dir *node, name string, n *node) {
	if j == nil {
		return
	}
	j.note = true
	if !j.rec {
		return
	}
	var ino uint64
	if n != nil {
		ino = n.ino
	}
	j.m.Entries = append(j.m.Entries, EntryRecord{Dir: dir.ino, Name: name, Ino: ino})
}

func (j *journal) write(n *node, off int64, p []byte) {
	if j == nil || !j.rec {
		return
	}
	j.m.Writes = append(j.m.Writes, WriteRecord{Ino: n.ino, Off: off, Data: append([]byte(nil), p...)})
}

func (j *journal) freed(n *node) {
	if j == nil || !j.rec {
		return
	}
	j.m.Freed = append(j.m.Freed, n.ino)
}

// commit hands the records to the store. op and name build the error.
func (f *FS) commit(j *journal, name string) error {
	if j == nil {
		return nil
	}
	if j.note {
		f.noteName(name)
	}
	if !j.rec {
		return nil
	}
	if err := f.store.Commit(&j.m); err != nil {
		f.log.Error("memfs: store commit failed", "op", j.m.Op, "name", name, "err", err)
		return pathErr(j.m.Op, name, err)
	}
	return nil
}

// sync asks a [Syncer] store to make every change so far durable.
func (f *FS) sync(op, name string) error {
	s, ok := f.store.(Syncer)
	if !ok {
		return nil
	}
	if err := s.Sync(); err != nil {
		f.log.Error("memfs: store sync failed", "op", op, "name", name, "err", err)
		return pathErr(op, name, err)
	}
	return nil
}

// Sync makes every change made so far durable, when the store is a
// [Syncer] (mounts.SyncFS): the whole-mount counterpart of fsync, for a
// kernel face's directory fsync or syncfs(2), whatever name it is given.
// Without such a store it has nothing to do.
func (f *FS) Sync(ctx context.Context, name string) error {
	if err := mounts.CheckPath("sync", name); err != nil {
		return err
	}
	return f.sync("sync", name)
}
