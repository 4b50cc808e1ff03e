package overlayfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// createExcl are the flags that make a new regular file and nothing else.
const createExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL

// copyChunk is how much of a file copy-up moves per call.
const copyChunk = 1 << 20

// copyUp gives e an entry in the upper, copying its parents up first; the
// caller holds f.mu exclusively. A directory is copied up empty: its lower
// directory stays merged below it. A regular file is copied whole, with its
// content unless data is false (it is about to be truncated to nothing).
// The copy is built in the work directory, attributes, extended attributes
// and bookkeeping included, and renamed into place in one step, so the
// upper never shows half a copy. It keeps the entry's inode number.
func (f *FS) copyUp(ctx context.Context, e *ent, data bool) error {
	if e.upper {
		return nil
	}
	if a, err := f.upper.Stat(ctx, up(e.name)); err == nil {
		// Copied up since e was resolved (as a parent of another
		// name of the same call).
		return f.refresh(ctx, e, a)
	}
	dir, _ := mounts.Split(e.name)
	parent, err := f.resolve(ctx, dir)
	if err != nil {
		return err
	}
	if err := f.copyUp(ctx, parent, false); err != nil {
		return err
	}
	la := e.la
	tmp := f.tmpName()
	if err := f.makeCopy(ctx, e, tmp, data); err != nil {
		f.discard(ctx, tmp)
		return err
	}
	m := meta{from: e.lower, hasFrom: true}
	// A lower file with other names is a file the copy no longer is:
	// only a lone name keeps the number (see "# Inode numbers").
	if la.Ino != 0 && (la.IsDir() || la.Nlink <= 1) {
		m.origin, m.hasOrigin = la.Ino, true
	}
	if err := f.settle(ctx, tmp, la, m); err != nil {
		f.discard(ctx, tmp)
		return cause(err)
	}
	if err := mounts.Rename(ctx, f.upper, tmp, up(e.name), mounts.RenameNoReplace); err != nil {
		f.discard(ctx, tmp)
		return cause(err)
	}
	a, err := f.upper.Stat(ctx, up(e.name))
	if err != nil {
		return cause(err)
	}
	return f.refresh(ctx, e, a)
}

// refresh makes e the upper entry a, keeping what it knew of its lower.
func (f *FS) refresh(ctx context.Context, e *ent, a mounts.Attr) error {
	m, err := f.readMeta(ctx, up(e.name), a)
	if err != nil {
		return cause(err)
	}
	e.upper, e.ua, e.um = true, a, m
	if !a.IsDir() {
		e.hasLower = false
	}
	return nil
}

// makeCopy makes tmp a copy of the lower entry of e: type, content or
// target, and the lower's extended attributes.
func (f *FS) makeCopy(ctx context.Context, e *ent, tmp string, data bool) error {
	la := e.la
	switch typ := la.Mode.Type(); {
	case typ == fs.ModeDir:
		if err := mounts.Mkdir(ctx, f.upper, tmp, 0o700); err != nil {
			return cause(err)
		}
	case typ == fs.ModeSymlink:
		target, err := f.lower.ReadLink(ctx, e.lower)
		if err != nil {
			return cause(err)
		}
		if err := mounts.Symlink(ctx, f.upper, target, tmp); err != nil {
			return cause(err)
		}
	case mounts.IsSpecial(typ):
		if err := mounts.Mknod(ctx, f.upper, tmp, typ|0o600, la.Rdev); err != nil {
			return cause(err)
		}
	default:
		if err := f.copyData(ctx, e, tmp, data); err != nil {
			return err
		}
	}
	if !takesXattrs(la.Mode) {
		return nil
	}
	names, err := mounts.ListXattr(ctx, f.lower, e.lower)
	if err != nil {
		return cause(err)
	}
	for _, attr := range names {
		if checkXattr(attr) != nil || reserved(attr) || f.own(attr) {
			continue
		}
		v, err := mounts.GetXattr(ctx, f.lower, e.lower, attr)
		if err != nil {
			return cause(err)
		}
		if err := mounts.SetXattr(ctx, f.upper, tmp, attr, v, 0); err != nil {
			return cause(err)
		}
	}
	return nil
}

// own reports whether attr describes the lower's own content.
func (f *FS) own(attr string) bool {
	for _, p := range f.opts.OwnXattrs {
		if strings.HasPrefix(attr, p) {
			return true
		}
	}
	return false
}

// copyData copies the lower file of e into a new upper file tmp.
func (f *FS) copyData(ctx context.Context, e *ent, tmp string, data bool) error {
	out, err := mounts.OpenFile(ctx, f.upper, tmp, createExcl, 0o600)
	if err != nil {
		return cause(err)
	}
	w, ok := out.(mounts.WritableFile)
	if !ok {
		out.Close()
		return mounts.ErrNotSupported
	}
	if data {
		if err := f.copyContent(ctx, e.lower, w); err != nil {
			w.Close()
			return err
		}
	}
	return cause(w.Close())
}

func (f *FS) copyContent(ctx context.Context, lname string, w mounts.WritableFile) error {
	in, err := f.lower.Open(ctx, lname)
	if err != nil {
		return cause(err)
	}
	defer in.Close()
	buf := make([]byte, copyChunk)
	for off := int64(0); ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := in.ReadAt(buf, off)
		if n > 0 {
			if _, err := w.WriteAt(buf[:n], off); err != nil {
				return cause(err)
			}
			off += int64(n)
		}
		switch {
		case errors.Is(rerr, io.EOF) || (rerr == nil && n == 0):
			return nil
		case rerr != nil:
			return cause(rerr)
		}
	}
}

// discard removes what a failed step left in the work directory.
func (f *FS) discard(ctx context.Context, tmp string) {
	if _, err := f.upper.Stat(ctx, tmp); err != nil {
		return
	}
	if err := mounts.RemoveAll(ctx, f.upper, tmp); err != nil {
		f.log.Warn("overlayfs: cannot clean the work directory", "name", tmp, "err", err)
	}
}

// exchange swaps two upper names atomically. ok is false when the upper
// cannot (it lacks RenameExchange), and nothing changed.
func (f *FS) exchange(ctx context.Context, a, b string) (ok bool, err error) {
	err = mounts.Rename(ctx, f.upper, a, b, mounts.RenameExchange)
	if errors.Is(err, mounts.ErrNotSupported) || errors.Is(err, fs.ErrInvalid) {
		return false, nil
	}
	return err == nil, cause(err)
}

// putWhiteout makes a whiteout at the upper name target, replacing the
// non-directory there, if any, in one rename.
func (f *FS) putWhiteout(ctx context.Context, target string) error {
	tmp, err := f.makeWhiteout(ctx)
	if err != nil {
		f.discard(ctx, tmp)
		return cause(err)
	}
	if err := mounts.Rename(ctx, f.upper, tmp, target, 0); err != nil {
		f.discard(ctx, tmp)
		return cause(err)
	}
	return nil
}

// replaceWhiteout moves tmp, a new entry in the work directory, over the
// whiteout at target. A file replaces it in one rename; a directory cannot
// replace a file, so the two are exchanged and the whiteout dropped, which
// is atomic too where the upper can exchange.
func (f *FS) replaceWhiteout(ctx context.Context, tmp, target string, dir bool) error {
	if !dir {
		return cause(mounts.Rename(ctx, f.upper, tmp, target, 0))
	}
	ok, err := f.exchange(ctx, tmp, target)
	if err != nil {
		return err
	}
	if !ok {
		if err := mounts.Unlink(ctx, f.upper, target); err != nil {
			return cause(err)
		}
		return cause(mounts.Rename(ctx, f.upper, tmp, target, 0))
	}
	return cause(mounts.Unlink(ctx, f.upper, tmp))
}

// clearDir removes whatever the upper holds in the upper directory dir:
// whiteouts of a directory that is empty to callers.
func (f *FS) clearDir(ctx context.Context, dir string) error {
	ents, err := f.upper.ReadDir(ctx, dir)
	if err != nil {
		return cause(err)
	}
	for _, e := range ents {
		if err := mounts.RemoveAll(ctx, f.upper, mounts.Join(dir, e.Name)); err != nil {
			return cause(err)
		}
	}
	return nil
}
