package overlayfs

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/vfsmount/vfsmount/mounts"
)

// The bookkeeping of the overlay, kept in the upper as extended attributes
// of its entries. The prefix is reserved: the overlay hides it from every
// listing and refuses to read or write it for callers.
const (
	xattrNS = "user.vfsmount.overlay."
	// xOrigin: the inode number the entry had in the overlay before it
	// was copied up (its lower's), 8 bytes big-endian.
	xOrigin = xattrNS + "origin"
	// xFrom: the lower name the entry was copied up from.
	xFrom = xattrNS + "from"
	// xWhiteout marks an empty regular file that hides the lower entry of
	// its name.
	xWhiteout = xattrNS + "whiteout"
	// xOpaque marks a directory whose lower directory is not merged: it
	// was removed and made again, or moved over a lower entry.
	xOpaque = xattrNS + "opaque"
	// xRedirect: the lower name of a directory's lower directory, when it
	// is not the directory's own name (it was renamed), as kernel
	// overlayfs's redirect_dir.
	xRedirect = xattrNS + "redirect"
	// xCheck, on an entry of metaDir: what the symlink or special file
	// it describes must be (its type, device and target), so that a
	// record left behind for a number the upper reused is not believed.
	xCheck = xattrNS + "check"
	// xFormat and xLower, on the upper's root: the layout's version and
	// the lower's identity.
	xFormat = xattrNS + "format"
	xLower  = xattrNS + "lower"
)

// reserved reports whether attr is the overlay's own.
func reserved(attr string) bool { return strings.HasPrefix(attr, xattrNS) }

// meta is the bookkeeping of one upper entry.
type meta struct {
	origin      uint64
	hasOrigin   bool
	from        string
	hasFrom     bool
	whiteout    bool
	opaque      bool
	redirect    string
	hasRedirect bool
}

// takesXattrs reports whether an entry of mode m can hold user.*
// attributes: Linux allows them on regular files and directories only.
func takesXattrs(m fs.FileMode) bool { return m.IsRegular() || m.IsDir() }

// sidecar names the record of an upper symlink or special file of inode
// number ino.
func sidecar(ino uint64) string { return metaDir + "/" + strconv.FormatUint(ino, 16) }

// check is what a sidecar records of the entry it describes.
func check(a mounts.Attr, target string) string {
	return fmt.Sprintf("%v %d %s", a.Mode.Type(), a.Rdev, target)
}

// readMeta reads the bookkeeping of the upper entry upath whose attributes
// are a.
func (f *FS) readMeta(ctx context.Context, upath string, a mounts.Attr) (meta, error) {
	if !takesXattrs(a.Mode) {
		return f.readSidecar(ctx, upath, a)
	}
	return f.readXattrs(ctx, upath)
}

func (f *FS) readXattrs(ctx context.Context, upath string) (meta, error) {
	var m meta
	if r, ok := f.upper.(xattrStater); ok {
		_, err := r.StatXattrs(ctx, upath, xattrNS, m.set)
		return m, err
	}
	names, err := mounts.ListXattr(ctx, f.upper, upath)
	if err != nil {
		return m, err
	}
	for _, attr := range names {
		if !reserved(attr) {
			continue
		}
		v, err := mounts.GetXattr(ctx, f.upper, upath, attr)
		if err != nil {
			return m, err
		}
		m.set(attr, v)
	}
	return m, nil
}

// xattrStater is an upper that gives an entry's attributes and those of
// its extended attributes with a name prefix in one lookup (memfs), where
// Stat, ListXattr and GetXattr take one each: a resolve reads every upper
// directory on its way and its bookkeeping.
type xattrStater interface {
	StatXattrs(ctx context.Context, name, prefix string, fn func(attr string, value []byte)) (mounts.Attr, error)
}

// statMeta returns the attributes of the upper entry upath and its
// bookkeeping.
func (f *FS) statMeta(ctx context.Context, upath string) (mounts.Attr, meta, error) {
	if r, ok := f.upper.(xattrStater); ok {
		var m meta
		a, err := r.StatXattrs(ctx, upath, xattrNS, m.set)
		if err != nil || takesXattrs(a.Mode) {
			return a, m, err
		}
		m, err = f.readSidecar(ctx, upath, a)
		return a, m, err
	}
	a, err := f.upper.Stat(ctx, upath)
	if err != nil {
		return a, meta{}, err
	}
	m, err := f.readMeta(ctx, upath, a)
	return a, m, err
}

// set records the bookkeeping attribute attr of value v in m; v is not
// kept.
func (m *meta) set(attr string, v []byte) {
	switch attr {
	case xOrigin:
		if len(v) == 8 {
			m.origin, m.hasOrigin = binary.BigEndian.Uint64(v), true
		}
	case xFrom:
		m.from, m.hasFrom = string(v), true
	case xWhiteout:
		m.whiteout = true
	case xOpaque:
		m.opaque = true
	case xRedirect:
		m.redirect, m.hasRedirect = string(v), true
	}
}

func (f *FS) readSidecar(ctx context.Context, upath string, a mounts.Attr) (meta, error) {
	sc := sidecar(a.Ino)
	if _, err := f.upper.Stat(ctx, sc); err != nil {
		if isNotExist(err) {
			return meta{}, nil
		}
		return meta{}, err
	}
	m, err := f.readXattrs(ctx, sc)
	if err != nil {
		return meta{}, err
	}
	var target string
	if a.Mode.Type() == fs.ModeSymlink {
		if target, err = f.upper.ReadLink(ctx, upath); err != nil {
			return meta{}, err
		}
	}
	got, err := mounts.GetXattr(ctx, f.upper, sc, xCheck)
	if err != nil || string(got) != check(a, target) {
		// A record for an inode number the upper has since given to
		// another entry: not this one's.
		return meta{}, nil
	}
	return m, nil
}

// writeMeta records m for the upper entry upath (attributes a), which the
// caller made in the work directory and nothing else can see yet.
func (f *FS) writeMeta(ctx context.Context, upath string, a mounts.Attr, m meta) error {
	if takesXattrs(a.Mode) {
		return f.writeXattrs(ctx, upath, m)
	}
	if !m.hasOrigin && !m.hasFrom {
		return nil
	}
	var target string
	if a.Mode.Type() == fs.ModeSymlink {
		var err error
		if target, err = f.upper.ReadLink(ctx, upath); err != nil {
			return err
		}
	}
	tmp := f.tmpName()
	if err := f.emptyFile(ctx, tmp); err != nil {
		return err
	}
	if err := f.writeXattrs(ctx, tmp, m); err != nil {
		return err
	}
	if err := mounts.SetXattr(ctx, f.upper, tmp, xCheck, []byte(check(a, target)), 0); err != nil {
		return err
	}
	return mounts.Rename(ctx, f.upper, tmp, sidecar(a.Ino), 0)
}

func (f *FS) writeXattrs(ctx context.Context, upath string, m meta) error {
	set := func(attr string, v []byte) error { return mounts.SetXattr(ctx, f.upper, upath, attr, v, 0) }
	if m.hasOrigin {
		if err := set(xOrigin, binary.BigEndian.AppendUint64(nil, m.origin)); err != nil {
			return err
		}
	}
	if m.hasFrom {
		if err := set(xFrom, []byte(m.from)); err != nil {
			return err
		}
	}
	if m.whiteout {
		if err := set(xWhiteout, []byte("y")); err != nil {
			return err
		}
	}
	if m.opaque {
		if err := set(xOpaque, []byte("y")); err != nil {
			return err
		}
	}
	if m.hasRedirect {
		if err := set(xRedirect, []byte(m.redirect)); err != nil {
			return err
		}
	}
	return nil
}

// forget drops the sidecar of an upper symlink or special file whose last
// name is gone (a is what it was). A sidecar left behind by a crash is
// harmless: its check no longer matches whatever gets the number next.
func (f *FS) forget(ctx context.Context, a mounts.Attr) {
	if takesXattrs(a.Mode) || a.Nlink > 1 {
		return
	}
	if err := mounts.Unlink(ctx, f.upper, sidecar(a.Ino)); err != nil && !isNotExist(err) {
		f.log.Warn("overlayfs: cannot drop a record", "ino", a.Ino, "err", err)
	}
}

// emptyFile creates an empty regular file at upath.
func (f *FS) emptyFile(ctx context.Context, upath string) error {
	fl, err := mounts.OpenFile(ctx, f.upper, upath, createExcl, 0)
	if err != nil {
		return err
	}
	return fl.Close()
}

// makeWhiteout builds a whiteout in the work directory and returns its
// name, for the caller to rename into place.
func (f *FS) makeWhiteout(ctx context.Context) (string, error) {
	tmp := f.tmpName()
	if err := f.emptyFile(ctx, tmp); err != nil {
		return "", err
	}
	if err := f.writeXattrs(ctx, tmp, meta{whiteout: true}); err != nil {
		return "", err
	}
	return tmp, nil
}

// settle gives an entry just made in the work directory the attributes of
// a (owner, permissions, times) and the bookkeeping m. Owners go first
// (chown clears setuid and setgid), times last (everything else stamps
// them).
func (f *FS) settle(ctx context.Context, tmp string, a mounts.Attr, m meta) error {
	if err := mounts.Chown(ctx, f.upper, tmp, int(a.Uid), int(a.Gid)); err != nil {
		return err
	}
	if a.Mode.Type() != fs.ModeSymlink {
		if err := mounts.Chmod(ctx, f.upper, tmp, a.Mode&permBits); err != nil {
			return err
		}
	}
	ua, err := f.upper.Stat(ctx, tmp)
	if err != nil {
		return err
	}
	if err := f.writeMeta(ctx, tmp, ua, m); err != nil {
		return err
	}
	return mounts.Chtimes(ctx, f.upper, tmp, a.Atime, a.Mtime)
}

// permBits are the mode bits chmod sets.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
