package memfs

import (
	"context"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"syscall"

	"github.com/vfsmount/vfsmount/mounts"
)

const (
	// xattrPrefix is the only namespace memfs stores: the others carry
	// meaning (security labels, ACLs, trusted data) it cannot honour.
	xattrPrefix = "user."
	// maxXattrValue is Linux's XATTR_SIZE_MAX.
	maxXattrValue = 64 << 10
	// maxXattrName is Linux's XATTR_NAME_MAX.
	maxXattrName = 255
)

// checkXattr validates an attribute name.
func checkXattr(attr string) error {
	switch {
	case !strings.HasPrefix(attr, xattrPrefix):
		return mounts.ErrNotSupported
	case len(attr) == len(xattrPrefix) || strings.IndexByte(attr, 0) >= 0:
		return fs.ErrInvalid
	case len(attr) > maxXattrName:
		return mounts.ErrNameTooLong
	}
	return nil
}

// GetXattr returns a copy of a user.* attribute.
func (f *FS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	const op = "getxattr"
	n, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	defer f.mu.RUnlock()
	if err := checkXattr(attr); err != nil {
		return nil, pathErr(op, name, err)
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	v, ok := n.xattrs[attr]
	if !ok {
		return nil, pathErr(op, name, mounts.ErrNoAttr)
	}
	return slices.Clone(v), nil
}

// ListXattr returns the attribute names, sorted.
func (f *FS) ListXattr(ctx context.Context, name string) ([]string, error) {
	n, err := f.lookup("listxattr", name)
	if err != nil {
		return nil, err
	}
	defer f.mu.RUnlock()
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Sorted(maps.Keys(n.xattrs)), nil
}

// StatXattrs returns the attributes of name, as Stat, and calls fn with
// each of its extended attributes whose name starts with prefix, in no
// order, the value valid only during the call: the overlay reads an upper
// entry and its bookkeeping with one lookup where Stat, ListXattr and
// GetXattr take one each. fn must not call into f.
func (f *FS) StatXattrs(ctx context.Context, name, prefix string, fn func(attr string, value []byte)) (mounts.Attr, error) {
	n, err := f.lookup("stat", name)
	if err != nil {
		return mounts.Attr{}, err
	}
	defer f.mu.RUnlock()
	n.mu.RLock()
	defer n.mu.RUnlock()
	for attr, v := range n.xattrs {
		if strings.HasPrefix(attr, prefix) {
			fn(attr, v)
		}
	}
	return n.attr(), nil
}

// SetXattr stores a user.* attribute on a file or directory. Symlinks take
// none (fs.ErrPermission), as on Linux; GetXattr on one finds nothing
// (mounts.ErrNoAttr). Name and value count against the
// byte quota.
func (f *FS) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	const op = "setxattr"
	n, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	defer f.mu.RUnlock()
	switch err := checkXattr(attr); {
	case err != nil:
		return pathErr(op, name, err)
	case flags&^(mounts.XattrCreate|mounts.XattrReplace) != 0:
		return pathErr(op, name, fs.ErrInvalid)
	case len(data) > maxXattrValue:
		return pathErr(op, name, syscall.E2BIG)
	case !n.takesXattrs():
		return pathErr(op, name, fs.ErrPermission)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old, exists := n.xattrs[attr]
	switch {
	case exists && flags&mounts.XattrCreate != 0:
		return pathErr(op, name, fs.ErrExist)
	case !exists && flags&mounts.XattrReplace != 0:
		return pathErr(op, name, mounts.ErrNoAttr)
	}
	delta := int64(len(data) - len(old))
	if !exists {
		delta += int64(len(attr))
	}
	if !f.reserveBytes(delta) {
		return pathErr(op, name, mounts.ErrNoSpace)
	}
	if n.xattrs == nil {
		n.xattrs = map[string][]byte{}
	}
	n.xattrs[attr] = slices.Clone(data)
	n.xattrBytes += delta
	n.changed(f.now(), false)
	j := f.journal(op)
	j.inode(n)
	return f.commit(j, name)
}

// RemoveXattr deletes an attribute; a missing one is mounts.ErrNoAttr. On a
// symlink it is fs.ErrPermission, as SetXattr.
func (f *FS) RemoveXattr(ctx context.Context, name, attr string) error {
	const op = "removexattr"
	n, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	defer f.mu.RUnlock()
	if err := checkXattr(attr); err != nil {
		return pathErr(op, name, err)
	}
	if !n.takesXattrs() {
		return pathErr(op, name, fs.ErrPermission)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old, ok := n.xattrs[attr]
	if !ok {
		return pathErr(op, name, mounts.ErrNoAttr)
	}
	delete(n.xattrs, attr)
	freed := int64(len(attr) + len(old))
	n.xattrBytes -= freed
	f.usedBytes.Add(-freed)
	n.changed(f.now(), false)
	j := f.journal(op)
	j.inode(n)
	return f.commit(j, name)
}
