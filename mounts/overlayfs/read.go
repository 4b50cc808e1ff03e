package overlayfs

import (
	"context"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// get checks and resolves name under the shared lock, for the read verbs.
func (f *FS) get(ctx context.Context, op, name string) (*ent, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, err := f.resolve(ctx, name)
	if err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	return e, nil
}

// Stat returns the attributes of name without following a final symlink.
// Copying up never changes what it reports but ctime.
func (f *FS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	const op = "stat"
	if err := mounts.CheckPath(op, name); err != nil {
		return mounts.Attr{}, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, err := f.resolve(ctx, name)
	if err != nil {
		return mounts.Attr{}, mounts.PathErr(op, name, err)
	}
	a, err := f.attr(ctx, e)
	return a, perr(op, name, err)
}

// ReadDir lists the merged directory, sorted by name.
func (f *FS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	const op = "readdir"
	if err := mounts.CheckPath(op, name); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, err := f.resolve(ctx, name)
	if err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	if !e.isDir() {
		return nil, mounts.PathErr(op, name, mounts.ErrNotDir)
	}
	ents, err := f.list(ctx, e)
	return ents, perr(op, name, err)
}

// StatDir lists a directory with its entries' attributes. A directory the
// upper does not hold is the lower's, entries and attributes alike, so the
// lower answers it in one call (a git mount's walks stay its own).
func (f *FS) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	const op = "readdir"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return nil, nil, err
	}
	if !e.isDir() {
		return nil, nil, mounts.PathErr(op, name, mounts.ErrNotDir)
	}
	if !e.upper {
		ents, attrs, err := mounts.StatDir(ctx, f.lower, e.lower)
		return ents, attrs, perr(op, name, err)
	}
	return mounts.StatEach(ctx, f, name)
}

// ReadLink returns a symlink's target.
func (f *FS) ReadLink(ctx context.Context, name string) (string, error) {
	const op = "readlink"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return "", err
	}
	if e.mode().Type() != fs.ModeSymlink {
		return "", mounts.PathErr(op, name, fs.ErrInvalid)
	}
	var target string
	if e.upper {
		target, err = f.upper.ReadLink(ctx, up(name))
	} else {
		target, err = f.lower.ReadLink(ctx, e.lower)
	}
	return target, perr(op, name, err)
}

// Open opens a regular file for reading: the upper's copy if there is one,
// the lower's file otherwise. Nothing is copied up.
func (f *FS) Open(ctx context.Context, name string) (mounts.File, error) {
	return f.OpenFile(ctx, name, os.O_RDONLY, 0)
}

// OpenWith is Open with the caller's options, which reach the commit's file
// of a name the upper does not hold ([mounts.OpenWithFS]).
func (f *FS) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	return f.openRead(ctx, name, o)
}

// openable refuses what Open refuses: directories, symlinks, special files.
func openable(m fs.FileMode) error {
	switch {
	case m.IsDir():
		return mounts.ErrIsDir
	case m.Type() == fs.ModeSymlink:
		return mounts.ErrLoop
	case mounts.IsSpecial(m):
		return mounts.ErrSpecial
	}
	return nil
}

func (f *FS) openRead(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	const op = "open"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return nil, err
	}
	if err := openable(e.mode()); err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	if e.upper {
		fl, err := f.upper.Open(ctx, up(name))
		if err != nil {
			return nil, perr(op, name, err)
		}
		return wrap(fl, name, e.um, true), nil
	}
	fl, err := mounts.OpenWith(ctx, f.lower, e.lower, o)
	if err != nil {
		return nil, perr(op, name, err)
	}
	return wrap(fl, name, meta{}, false), nil
}

// checkXattr validates an attribute name as the memory and host mounts do:
// only user.* is served, and the overlay's own names are not the caller's.
func checkXattr(attr string) error {
	const user = "user."
	switch {
	case !strings.HasPrefix(attr, user):
		return mounts.ErrNotSupported
	case len(attr) == len(user) || strings.IndexByte(attr, 0) >= 0:
		return fs.ErrInvalid
	case len(attr) > 255:
		return mounts.ErrNameTooLong
	}
	return nil
}

// GetXattr reads an attribute of the upper's copy, or of the lower's entry.
// The overlay's own attributes are hidden: they do not exist for callers.
func (f *FS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	const op = "getxattr"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return nil, err
	}
	if err := checkXattr(attr); err != nil {
		return nil, mounts.PathErr(op, name, err)
	}
	if reserved(attr) {
		return nil, mounts.PathErr(op, name, mounts.ErrNoAttr)
	}
	v, err := f.entXattr(ctx, e, attr)
	return v, perr(op, name, err)
}

// ListXattr lists the attributes, sorted, without the overlay's own.
func (f *FS) ListXattr(ctx context.Context, name string) ([]string, error) {
	const op = "listxattr"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return nil, err
	}
	var names []string
	if e.upper {
		names, err = mounts.ListXattr(ctx, f.upper, up(name))
	} else {
		names, err = mounts.ListXattr(ctx, f.lower, e.lower)
	}
	if err != nil {
		return nil, perr(op, name, err)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !reserved(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// StatFS reports the upper's usage: it is where changes go.
func (f *FS) StatFS(ctx context.Context) (mounts.FSStat, error) {
	if !f.caps.Has(mounts.CapStatFS) {
		return mounts.FSStat{}, mounts.PathErr("statfs", ".", mounts.ErrNotSupported)
	}
	st, err := mounts.StatFS(ctx, f.upper)
	return st, perr("statfs", ".", err)
}

// Sync makes name durable: the upper's copy through the upper's Sync. An
// entry only the lower holds has nothing to make durable.
func (f *FS) Sync(ctx context.Context, name string) error {
	const op = "sync"
	e, err := f.get(ctx, op, name)
	if err != nil {
		return err
	}
	if !e.upper {
		return nil
	}
	return perr(op, name, mounts.Sync(ctx, f.upper, up(name)))
}
