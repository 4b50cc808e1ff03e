package hostfs

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// chownNew gives a new entry to the caller carried by ctx, as a file system
// does for the process that creates a file. It only acts when the mount runs
// as root (anyone else could not give files away) and the caller differs
// from the process; a setgid parent keeps its group, as on Linux.
//
// The host kernel clears setuid and setgid when it changes a file's owner,
// even for root, so callers create an entry without those bits, give it
// away, and only then set its final mode: no entry ever carries a setuid
// bit while it belongs to root. Between creation and chownNew the entry is
// root's, with the permission bits its caller asked for; a process that
// opens it in that window gets no more access than the mode grants anyway.
func (f *ReadOnlyFS) chownNew(ctx context.Context, dirfd int, base string) error {
	if f.euid != 0 {
		return nil
	}
	c, ok := mounts.CallerFrom(ctx)
	if !ok || (int(c.Uid) == f.euid && int(c.Gid) == f.egid) {
		return nil
	}
	uid, gid := int(c.Uid), int(c.Gid)
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_ISGID != 0 {
		gid = -1
	}
	return unix.Fchownat(dirfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

// settleNew finishes an entry just made in dirfd without its setuid and
// setgid bits: it gives it to its caller (chownNew), then sets exactly the
// mode want, plus the bits of keep the host gave it (the setgid a setgid
// parent passes to a directory). The process's umask applied at creation;
// the caller's mode is the truth.
func (f *ReadOnlyFS) settleNew(ctx context.Context, dirfd int, base string, want, keep uint32) error {
	if err := f.chownNew(ctx, dirfd, base); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	want |= st.Mode & keep
	if st.Mode&0o7777 != want {
		return chmodat(dirfd, base, want)
	}
	return nil
}

// OpenFile opens name with os.OpenFile flag semantics. A final symlink is
// never followed (ELOOP), also not to create through a dangling one. A new
// file gets exactly perm.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	h, err := f.openFile(ctx, "open", name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !mounts.WantsWrite(flag) {
		return h, nil
	}
	return &writable{file: h}, nil
}

// Truncate changes the size of a regular file by name. Anything else is
// refused before it is opened, as truncate(2) refuses it: a device or FIFO
// opened for writing could act on the open alone.
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	return f.inParent("truncate", name, func(dirfd int, base string) error {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return unix.EISDIR
		case unix.S_IFLNK:
			return unix.ELOOP
		default:
			return unix.EINVAL
		}
		fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Ftruncate(fd, size)
	})
}

// Mkdir creates a directory with exactly perm (plus the setgid bit a setgid
// parent passes down, as on Linux).
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return f.inParent("mkdir", name, func(dirfd int, base string) error {
		want := mounts.UnixPerm(perm)
		if err := unix.Mkdirat(dirfd, base, want&0o777); err != nil {
			return err
		}
		return f.settleNew(ctx, dirfd, base, want, unix.S_ISGID)
	})
}

// Unlink removes a non-directory.
func (f *FS) Unlink(ctx context.Context, name string) error {
	return f.remove("unlink", name, 0)
}

// Rmdir removes an empty directory.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	return f.remove("rmdir", name, unix.AT_REMOVEDIR)
}

func (f *FS) remove(op, name string, flags int) error {
	if name == "." {
		return mounts.PathErr(op, name, mounts.ErrBusy)
	}
	return f.inParent(op, name, func(dirfd int, base string) error {
		return unix.Unlinkat(dirfd, base, flags)
	})
}

// Rename renames with renameat2(2); RenameNoReplace and RenameExchange are
// the kernel's RENAME_NOREPLACE and RENAME_EXCHANGE. Both names are taken
// relative to parents resolved inside the root, so nothing is ever moved
// out of it. The root itself cannot be renamed (ErrBusy).
func (f *FS) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	const op = "rename"
	if err := mounts.CheckPath(op, oldname); err != nil {
		return err
	}
	if err := mounts.CheckPath(op, newname); err != nil {
		return err
	}
	var kflags uint
	if flags&mounts.RenameNoReplace != 0 {
		kflags |= unix.RENAME_NOREPLACE
	}
	if flags&mounts.RenameExchange != 0 {
		kflags |= unix.RENAME_EXCHANGE
	}
	if flags&^(mounts.RenameNoReplace|mounts.RenameExchange) != 0 {
		return mounts.PathErr(op, oldname, fs.ErrInvalid)
	}
	if oldname == "." {
		return mounts.PathErr(op, oldname, mounts.ErrBusy)
	}
	if newname == "." {
		return mounts.PathErr(op, newname, mounts.ErrBusy)
	}
	return f.inParents(op, oldname, newname, func(olddir int, oldbase string, newdir int, newbase string) error {
		return unix.Renameat2(olddir, oldbase, newdir, newbase, kflags)
	})
}

// Symlink creates name as a symlink to target, stored verbatim. The target is
// not checked: a symlink is served as a symlink and never followed by the
// mount, so one pointing outside the root leaks nothing.
func (f *FS) Symlink(ctx context.Context, target, name string) error {
	return f.inParent("symlink", name, func(dirfd int, base string) error {
		if err := unix.Symlinkat(target, dirfd, base); err != nil {
			return err
		}
		return f.chownNew(ctx, dirfd, base)
	})
}

// Mknod creates a FIFO, a socket or a device with exactly the permission
// bits of mode, owned by the caller as a new file is. A device also needs a
// caller that may create one (mounts.MayCreateDevice); the host then asks
// the same of this process.
func (f *FS) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	dev, err := mounts.CheckMknod(ctx, name, mode, dev)
	if err != nil {
		return err
	}
	return f.inParent("mknod", name, func(dirfd int, base string) error {
		want := mounts.UnixPerm(mode)
		if err := unix.Mknodat(dirfd, base, mounts.TypeBits(mode)|want&0o777, int(dev)); err != nil {
			return err
		}
		return f.settleNew(ctx, dirfd, base, want, 0)
	})
}

// Link makes newname a hard link to oldname. linkat(2) without
// AT_SYMLINK_FOLLOW links a symlink itself, never what it points at.
func (f *FS) Link(ctx context.Context, oldname, newname string) error {
	return f.inParents("link", oldname, newname, func(olddir int, oldbase string, newdir int, newbase string) error {
		return unix.Linkat(olddir, oldbase, newdir, newbase, 0)
	})
}

// Chmod sets the permission, setuid, setgid and sticky bits. It does not
// follow a final symlink; Linux has no modes on symlinks, so chmod of one
// fails with ErrNotSupported.
func (f *FS) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return f.inParent("chmod", name, func(dirfd int, base string) error {
		return chmodat(dirfd, base, mounts.UnixPerm(mode))
	})
}

// chmodat is fchmodat2(2) with AT_SYMLINK_NOFOLLOW. Kernels before 6.6 lack
// it; there the file is opened with O_PATH|O_NOFOLLOW and changed through
// its /proc/self/fd link, which names that very inode.
func chmodat(dirfd int, base string, mode uint32) error {
	err := unix.Fchmodat(dirfd, base, mode, unix.AT_SYMLINK_NOFOLLOW)
	if !errors.Is(err, unix.EOPNOTSUPP) {
		return err
	}
	fd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	return unix.Chmod(procFd(fd), mode)
}

func procFd(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Chown changes owners without following a final symlink; -1 keeps an id.
// Giving a file away needs root, as on the host.
func (f *FS) Chown(ctx context.Context, name string, uid, gid int) error {
	return f.inParent("chown", name, func(dirfd int, base string) error {
		return unix.Fchownat(dirfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Chtimes sets access and modification times with nanoseconds, on a symlink
// itself if name is one. A zero time is left unchanged.
func (f *FS) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	return f.inParent("chtimes", name, func(dirfd int, base string) error {
		return unix.UtimesNanoAt(dirfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}
