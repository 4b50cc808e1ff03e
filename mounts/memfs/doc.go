// Package memfs is the memory mount: a POSIX-like tree held in RAM, with
// every capability of the mounts contract.
//
// # What it holds
//
// Regular files, directories and symlinks, with modes (including setuid,
// setgid and sticky), owners, nanosecond times, hard links and user.*
// extended attributes. Inode numbers count up from 1 (the root) and are
// never reused while the mount lives; hard links share one.
//
// File data is kept in 64 KiB pages, allocated on first write; a page holds
// only the prefix that was written. Holes cost nothing, so writing one byte
// at 1 GiB, or truncating a file to 1 TiB, touches one page or none, and
// Attr.Blocks counts only what is allocated.
//
// # Semantics of note
//
//   - Names are never resolved through symlinks: a symlink in the middle of
//     a path is mounts.ErrNotDir, and Open of a symlink is mounts.ErrLoop.
//     The kernel and the union resolve links before they reach a mount.
//   - Permission bits are stored, not enforced: the kernel face
//     (default_permissions) and the policy layer decide access.
//   - atime is set at creation and by Chtimes, never by reads, as with the
//     noatime mount option. mtime changes with content (and a directory's
//     when entries come or go); ctime with every change.
//   - Unlinking or renaming over an open file keeps its content until the
//     last handle closes; the handle still reads, writes and stats it.
//   - Rename is atomic, with rename(2) and renameat2(2) rules: see
//     [FS.Rename].
//   - Only user.* extended attributes are stored, on files and
//     directories; other namespaces are mounts.ErrNotSupported. Values are
//     limited to 64 KiB (E2BIG past that).
//   - Quotas (Options.MaxBytes, Options.MaxFiles) refuse growth with
//     mounts.ErrNoSpace; a write that does not fit writes nothing. Bytes are
//     what is allocated: written file pages, symlink targets, extended
//     attributes. StatFS reports usage against the quotas.
//
// # Concurrency
//
// A tree lock, shared by lookups and exclusive for changes of names, guards
// the directories; each inode has its own lock for its attributes and data.
// Reads of different files, or of one file, never wait for each other;
// writes to different files proceed in parallel, and only operations that
// add, remove or move names serialise.
//
// # Persistence
//
// The tree reports every change to an optional [Store] as inode-level
// records, in order of effect, before the change is acknowledged; a store
// that batches them ([Syncer]) is synced on fsync and on the close of a
// handle that wrote. [Restore] starts a tree from what a store saved.
// Without a store the tree lives as long as the process. Package boltstore
// is the persistent store.
//
// # Checkpoints
//
// [FS.Checkpoint] freezes the tree in what changed since the previous
// checkpoint, sharing unchanged pages copy-on-write; [FS.RestoreCheckpoint]
// brings it back atomically, open files keeping what they had;
// [FS.CheckpointView] reads one; a store keeps them with the tree (see
// checkpoint.go).
package memfs
