package overlayfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrResetInside is wrapped by [FS.Reset] for a name below a directory that
// was renamed or removed and made again: the lower's entry of that name is
// not what the directory would show once reset, so the directory is what
// to reset.
var ErrResetInside = errors.New("inside a renamed or replaced directory: reset that directory")

// Reset discards the changes at and below each name, as git checkout
// COMMIT -- NAME does: afterwards the name shows the lower's entry, or
// nothing when the lower has none. "." discards every change. A change of
// another name is kept, even one that came from a reset name: resetting
// the new name of a renamed file brings back the lower's entry there and
// leaves the old name removed. Each name is reset in one rename in the
// upper (into the work directory, emptied then), so a crash leaves it
// reset or not, never half.
func (f *FS) Reset(ctx context.Context, names ...string) error {
	defer f.j.note(true, names...)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		if !mounts.ValidPath(name) {
			return mounts.PathErr("reset", name, fs.ErrInvalid)
		}
		if name == "." {
			ents, err := f.upper.ReadDir(ctx, treeDir)
			if err != nil {
				return perr("reset", name, err)
			}
			for _, e := range ents {
				if f.private(e.Name) {
					continue
				}
				if err := f.resetOne(ctx, e.Name); err != nil {
					return err
				}
			}
			continue
		}
		skip := false
		for dir, _ := mounts.Split(name); dir != "."; dir, _ = mounts.Split(dir) {
			ua, err := f.upper.Stat(ctx, up(dir))
			if isNotExist(err) || errors.Is(err, mounts.ErrNotDir) {
				skip = true // nothing of name's was ever changed
				continue
			}
			if err != nil {
				return perr("reset", name, err)
			}
			if !ua.IsDir() {
				skip = true // below a whiteout: nothing there to reset
				continue
			}
			m, err := f.readMeta(ctx, up(dir), ua)
			if err != nil {
				return perr("reset", name, err)
			}
			if m.opaque || m.hasRedirect {
				return mounts.PathErr("reset", name, fmt.Errorf("%w %s", ErrResetInside, dir))
			}
		}
		if skip {
			continue
		}
		if err := f.resetOne(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// resetOne moves the upper entry of name out of the tree and removes it.
func (f *FS) resetOne(ctx context.Context, name string) error {
	if _, err := f.upper.Stat(ctx, up(name)); err != nil {
		if isNotExist(err) || errors.Is(err, mounts.ErrNotDir) {
			return nil
		}
		return perr("reset", name, err)
	}
	tmp := f.tmpName()
	if err := mounts.Rename(ctx, f.upper, up(name), tmp, 0); err != nil {
		return perr("reset", name, err)
	}
	f.discard(ctx, tmp)
	return nil
}
