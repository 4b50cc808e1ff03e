// Package hostfs serves a host directory as a mount: a confined passthrough
// built on [os.Root].
//
// [Open] returns a [*FS] (every write capability) or, with
// [Options.ReadOnly], a [*ReadOnlyFS], a distinct type with no write method
// at all, so the helpers of package mounts report EROFS for every verb that
// would change the tree.
//
// # Confinement
//
// No operation reads or writes outside the source directory. Each call
// resolves the parent directory of its name inside the root, following
// symlinks only while they stay below it and never an absolute one: with one
// openat2(2) call under RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, where the
// kernel confines the walk, or with [os.Root] (component by component) on
// kernels without openat2. It then acts on the final component with a *at
// system call on that parent's descriptor, never following a final symlink
// (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW). No path is ever checked lexically. So:
//
//   - ".." never appears in a name (mounts.CheckPath) and os.Root refuses it
//     in symlink targets that would climb out;
//   - an absolute symlink, or a relative one that climbs out, in the middle of
//     a name fails with [mounts.ErrEscapes]; as the final component it is
//     served as a symlink (Stat, ReadLink), never followed: Open fails with
//     ELOOP and so does a create through a dangling link;
//   - hard links are made with linkat without AT_SYMLINK_FOLLOW, so linking a
//     symlink links the symlink, not what it points at;
//   - a rename takes both names relative to parents resolved inside the root;
//   - a directory swapped for a symlink between two calls is harmless: the
//     parent is held open as a descriptor for the whole operation, and the
//     final component is never followed. Nothing is checked lexically and
//     then used by name.
//
// The escape tests run every case under both resolvers.
//
// Behaviours of note: like os.Root, the mount does not stop at file-system
// boundaries below the root (a bind mount inside the source is served), and
// if another program moves a directory out of the source while an operation
// holds it open, that one operation acts on the directory where it now is.
// Device nodes and FIFOs are listed and stat'ed but Open refuses them
// (reading a device through a workspace is never what an agent means).
//
// # Errors
//
// Every error is a *fs.PathError naming the mount-relative name the caller
// passed, never a host path. Host errno values (ENOSPC, EIO, EDQUOT, ...) are
// wrapped unchanged, so errors.Is works against both the io/fs and mounts
// sentinels and the errno itself.
//
// # Inode numbers
//
// Attr.Ino is the host inode number when the entry lives on the source's own
// device and the number is below 2^48; otherwise a hash of (device, inode)
// with bit 55 set, so the two ranges never meet. Either way it fits in 56
// bits, leaving the top byte to the union's mount index.
//
// # Extended attributes
//
// Only the user.* namespace is served: ListXattr hides the others, GetXattr
// reports them missing and SetXattr refuses them with ErrNotSupported. The
// security and trusted namespaces of the host are not the workspace's
// business (and a kernel face asking for security.capability on every write
// gets a fast ENODATA).
//
// # Fast path
//
// Files implement [mounts.FDFile]: the kernel face may hand their descriptor
// to the kernel (FUSE passthrough) so reads and writes bypass this process.
// Confinement holds: the kernel reopens the descriptor's own path (the
// dentry this package resolved, not a name), with the flags of each open
// through the mount, so a read-only descriptor backs writers too and no
// second descriptor is needed.
package hostfs
