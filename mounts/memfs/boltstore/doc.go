// Package boltstore keeps a memory mount ([memfs]) in a file, so that its
// tree survives restarts and crashes. It is a [memfs.Syncer] backed by
// go.etcd.io/bbolt, an embedded copy-on-write B+tree whose every
// transaction is atomic and, once committed with fdatasync, durable.
//
// # Durability contract
//
// The tree is always served from memory; the file follows it. Changes are
// collected in memory and written to the file in batches, one bbolt
// transaction (and one fdatasync) per batch. A batch is written:
//
//   - when a file is synced: fsync(2) or fdatasync(2) through the kernel,
//     or Sync of a file through the library or tool face. The call returns
//     only when every change made before it, to any file of the mount, is
//     on disk (a file's fsync also makes its name durable: there is no need
//     to fsync the directory, and directory fsyncs do nothing);
//   - when a handle that wrote or truncated its file is closed (the tool
//     face's Close returns after the write; through the kernel, close(2)
//     does not wait for it, because FUSE releases files asynchronously);
//   - at unmount (Close): everything is written before the file is closed;
//   - otherwise at most [Options.FlushInterval] (one second by default)
//     after a change, or as soon as [Options.MaxPending] bytes of changes
//     are waiting, whichever comes first.
//
// After a crash (kill -9, an OOM kill, a power cut) the file opens, and
// holds the tree as it was after some batch: every synced change, and
// whatever batches were written after it. Changes are never torn: the tree
// loaded is one that existed, never a mix. Files that were unlinked while
// still open are dropped when the file is next opened.
//
// # Format
//
// The bbolt file holds four buckets (and three more once the tree has a
// checkpoint: see checkpoint.go): "vfsmount" (a magic value and the
// format version), "inodes" (inode number to its metadata), "entries"
// (directory inode and name to inode) and "data" (inode and chunk index to
// the bytes of that 64 KiB chunk that were ever written; holes take no
// space). Chunks keep large files cheap to change: a write rewrites the
// chunks it touches, never the whole file. The format version is
// [FormatVersion]; a file written by a newer version is refused with
// [ErrNewerFormat], and a file that is not a store ([ErrNotOurs]) or that
// cannot be read back as a tree ([ErrCorrupt]) is refused too. None of
// these is ever written to.
//
// # Locking
//
// Only one process may hold a store: Open takes an exclusive flock on the
// file and gives up after [Options.LockTimeout] with [ErrLocked].
package boltstore
