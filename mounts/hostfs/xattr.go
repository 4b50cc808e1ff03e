package hostfs

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// xattrPrefix is the only namespace served; see the package doc.
const xattrPrefix = "user."

func checkXattr(attr string) error {
	switch {
	case !strings.HasPrefix(attr, xattrPrefix):
		return mounts.ErrNotSupported
	case len(attr) == len(xattrPrefix) || strings.IndexByte(attr, 0) >= 0:
		return fs.ErrInvalid
	case len(attr) > 255:
		return mounts.ErrNameTooLong
	}
	return nil
}

// withPath runs fn with a path that names exactly the inode of name: the
// final component is opened O_PATH|O_NOFOLLOW (no side effects, even on a
// device or FIFO) and reached through its /proc/self/fd link. The f*xattr
// calls do not accept O_PATH descriptors, and the l*xattr calls on a
// name would resolve the parent path again, outside os.Root's care.
func (f *ReadOnlyFS) withPath(op, name string, fn func(path string) error) error {
	return f.inParent(op, name, func(dirfd int, base string) error {
		fd, err := unix.Openat(dirfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return fn(procFd(fd))
	})
}

// GetXattr reads a user.* extended attribute. A missing one is ErrNoAttr.
func (f *ReadOnlyFS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	const op = "getxattr"
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	if err := checkXattr(attr); err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	var out []byte
	err := f.withPath(op, name, func(path string) error {
		for {
			// Getxattr follows the /proc link itself, which jumps to
			// the opened inode without resolving anything by name.
			n, err := unix.Getxattr(path, attr, nil)
			if err != nil {
				return err
			}
			buf := make([]byte, n)
			n, err = unix.Getxattr(path, attr, buf)
			if errors.Is(err, unix.ERANGE) {
				continue // it grew in between
			}
			if err != nil {
				return err
			}
			out = buf[:n]
			return nil
		}
	})
	return out, err
}

// ListXattr lists the user.* attribute names of name, sorted as the host
// returns them.
func (f *ReadOnlyFS) ListXattr(ctx context.Context, name string) ([]string, error) {
	var out []string
	err := f.withPath("listxattr", name, func(path string) error {
		for {
			n, err := unix.Listxattr(path, nil)
			if err != nil || n == 0 {
				return err
			}
			buf := make([]byte, n)
			n, err = unix.Listxattr(path, buf)
			if errors.Is(err, unix.ERANGE) {
				continue
			}
			if err != nil {
				return err
			}
			for a := range strings.SplitSeq(string(buf[:n]), "\x00") {
				if strings.HasPrefix(a, xattrPrefix) {
					out = append(out, a)
				}
			}
			return nil
		}
	})
	return out, err
}

// SetXattr writes a user.* attribute; flags are mounts.XattrCreate or
// mounts.XattrReplace, which are the kernel's values.
func (f *FS) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	const op = "setxattr"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if err := checkXattr(attr); err != nil {
		return mounts.PathErr(op, name, err)
	}
	if flags&^(mounts.XattrCreate|mounts.XattrReplace) != 0 {
		return mounts.PathErr(op, name, fs.ErrInvalid)
	}
	return f.withPath(op, name, func(path string) error {
		return unix.Setxattr(path, attr, data, flags)
	})
}

// RemoveXattr removes a user.* attribute.
func (f *FS) RemoveXattr(ctx context.Context, name, attr string) error {
	const op = "removexattr"
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if err := checkXattr(attr); err != nil {
		return mounts.PathErr(op, name, err)
	}
	return f.withPath(op, name, func(path string) error {
		return unix.Removexattr(path, attr)
	})
}
