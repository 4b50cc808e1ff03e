// Package overlayfs is a copy-on-write overlay mount: a read-only lower
// [mounts.FS] (in practice a git commit, immutable and lazy) seen through a
// writable upper [mounts.FS] (a memory tree, persisted or not, or a host
// directory) that receives every change. It is how a git mount becomes
// writable: the commit stays the lower layer, untouched and shared, and the
// upper holds only what changed. It imports only the contract: lower and
// upper are any mounts.
//
// # Layers
//
// A name shows the upper's entry when the upper has one, and the lower's
// otherwise. Directories present in both are merged: their listing is the
// upper's entries and the lower's, less what the upper hides, sorted. The
// lower is only ever read; [New] needs an upper that can write files, make
// and remove directories, rename, set extended attributes, and change modes,
// owners and times. The overlay offers every capability of the contract its
// upper offers ([mounts.CapabilityReporter]), and xattrs always.
//
// # Copy-up
//
// Nothing is copied by a stat, a read, a listing, a readlink or an xattr
// read. The first change of a lower entry (a write or an open for writing,
// truncate, chmod, chown, chtimes, an xattr change, a hard link, a rename)
// copies it up, whole: a regular file with its content (none when it is
// about to be truncated to nothing), a symlink with its target, a special
// file with its device, a directory empty (its lower contents stay below
// it, merged). Owner, mode, times and the lower's user.* attributes come
// along, except those [Options.OwnXattrs] names (a git mount's user.git.*,
// which describe the object, not a copy that may change). The parents are
// copied up first, as empty directories. A copy is built in the upper's
// work directory and renamed into place in one step: the upper never
// shows half a copy.
//
// # Deletions, opaque directories, renames
//
//   - Removing a name the lower has leaves a whiteout: an empty upper file
//     marked as one, which hides the lower entry. Removing a name only the
//     upper has leaves nothing.
//   - A directory made where a lower directory (or file) was removed is
//     opaque: the lower's contents do not show through it.
//   - A directory is empty when its merged listing is; rmdir of a lower
//     directory whose entries were all removed works.
//   - Rename works for files and directories, lower ones included, within
//     the overlay: never EXDEV (mv dir1 dir2 just works). As kernel
//     overlayfs's redirect_dir, a lower directory is copied up empty and
//     records where its lower contents live (a redirect); only that
//     directory and a whiteout for its old name are written, whatever the
//     size of the tree below. A directory with no lower contents moved over
//     a lower name is made opaque. RenameNoReplace and RenameExchange are
//     served (the exchange needs an upper that can exchange).
//   - Every change is atomic for callers of the overlay, which serialises
//     changes of the tree and lets reads see none half done.
//
// # Inode numbers
//
// An entry keeps its number across copy-up, rename and remount, as
// editors, find -inum and git's racy-entry check expect. Untouched lower
// entries report the lower's numbers. A copied-up entry keeps the number it
// had (recorded in the upper), and so do renamed ones, hard links of it, and
// everything below a renamed directory. A new entry gets the upper's number
// with bit 55 set: never one of the numbers of a lower that numbers below
// 2^55 (the memory mount, the host mount on its own device). The git mount
// hashes into 56 bits, so there a new number may equal a lower one with the
// chance two git entries have of sharing one (about n·m/2^56 for n lower
// and m new entries). Numbers fit in 56 bits, leaving the union its top
// byte. A merged directory's link count is that of its merged listing.
//
// # Bookkeeping
//
// Everything the overlay knows lives in the upper, through the contract, so
// an upper reopened over the same lower (a memory upper persisted with
// boltstore, or a host directory) gives back the same tree with the same
// numbers. The upper's root holds three directories: tree (the changed
// names, at their own paths), work (scratch space, emptied by New) and meta;
// the root's attributes record the format and the lower's identity
// ([Options.LowerID], by default a git mount's full commit SHA), and New
// refuses an upper made over another lower ([ErrOtherLower], naming both)
// or one that holds something else ([ErrBadUpper]). Entries of the tree
// carry user.vfsmount.overlay.* attributes: origin (the number kept),
// from (the lower name copied up), whiteout, opaque, redirect. Symlinks and
// special files cannot carry user.* attributes, so theirs are kept on an
// entry of meta named by their upper inode number, with a check of what
// they are, so a record outliving its entry is not believed. The reserved
// names are hidden: listed by no ListXattr, absent to GetXattr (ErrNoAttr),
// refused by SetXattr and RemoveXattr (fs.ErrPermission). No whiteout or
// bookkeeping name ever shows in a listing.
//
// # Changes
//
// [FS.Changes] lists what differs from the lower: added, modified (type or
// mode changes included) and deleted names, with where renamed ones came
// from. It walks the upper only, so it costs in the number of changes, not
// the size of the tree: what git status and a diff against the commit need.
// [FS.Reset] discards the changes at and below names, each in one rename
// in the upper.
//
// Names of [Options.Private] (a writable git mount's .git) are the owner's
// own: Changes never lists them and Reset of "." keeps them.
//
// # Journal
//
// [FS.Journal] records every change through the overlay, writes through
// open files included, with a sequence number, after the change is made:
// [Journal.Since] tells what changed after a token, which is what git's
// fsmonitor hook asks. Directories are named with a trailing "/" too
// (everything below). A token of another journal (an earlier run), or one
// older than the names the journal forgot (it keeps 65,536), is answered
// with "everything may have changed", never with a guess. The names are
// those the change was made by: a write through a file opened by a name
// that was since renamed, or through one of several hard links, is noted
// under the name it was opened by.
//
// # Errors
//
// Every error is a *fs.PathError naming the caller's name, never the
// upper's layout or a redirected lower name; sentinels are the contract's.
// Errors a layer returns (ENOSPC from a quota, EIO from a broken git object)
// pass through.
//
// # Limitations
//
//   - Copy-up is whole-file: the first change of a 50 MiB lower file copies
//     50 MiB, and other changes and lookups wait for it.
//   - A file opened for reading before its copy-up keeps reading the lower's
//     content, as with kernel overlayfs.
//   - Hard links inside the lower are not kept together: copying one name
//     up makes it a file of its own, with a new number (a git commit has no
//     hard links). Hard links made through the overlay are kept.
//   - A change is several calls on the upper. Callers never see it half
//     done, but a crash can leave one half done in a persisted upper: the
//     rename of a lower entry over an existing name then shows both names
//     (the old one with its lower content), never neither. Copy-ups,
//     whiteouts, new entries over removed ones and renames to free names
//     are one rename or exchange in the upper, atomic where the upper is;
//     without RenameExchange in the upper, rmdir of a lower directory and
//     renames of lower entries take two steps.
//   - Copying up a device node made by mknod needs a caller who may make
//     one (mounts.MayCreateDevice).
//   - Permission bits are stored, not enforced, as by the memory mount: the
//     kernel face and the policy layer decide access.
package overlayfs
