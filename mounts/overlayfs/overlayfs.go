package overlayfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrBadUpper is wrapped by [New] for an upper mount that cannot hold an
// overlay: one that lacks a verb the overlay needs, or that holds something
// other than an upper layer.
var ErrBadUpper = errors.New("not a usable upper layer")

// ErrOtherLower is wrapped by [New] for an upper layer that was made over a
// different lower layer; the message names both.
var ErrOtherLower = errors.New("upper layer belongs to another lower layer")

// Options configure an overlay. The zero value is usable.
type Options struct {
	// LowerID names the lower layer in the upper's record, so that an
	// upper layer is never reopened over another lower one. Empty means
	// the lower's Commit() (a git mount's full SHA) when it has one, and
	// its Describe().Source otherwise.
	LowerID string
	// OwnXattrs are prefixes of the lower's extended attributes that
	// describe the lower's own content (a git mount's "user.git."): they
	// are shown on untouched entries and not copied up, since a copy
	// that may change is no longer that object.
	OwnXattrs []string
	// Logger receives what the overlay cleans up or ignores; nil is
	// silent.
	Logger *slog.Logger
	// Private are top-level names that hold what the overlay's owner
	// keeps beside the tree, not changes of it (a writable git mount's
	// synthesized .git): Changes never lists them and Reset of "." keeps
	// them. They are files of the overlay like any other otherwise.
	Private []string
}

// FS is a copy-on-write overlay. It implements mounts.FS and every
// capability interface of the contract, and reports through
// mounts.CapabilityReporter those its upper layer can honour. It is safe
// for concurrent use.
type FS struct {
	lower mounts.FS
	upper mounts.FS
	opts  Options
	log   *slog.Logger
	caps  mounts.Capability
	id    string // the lower's identity, as recorded in the upper

	// mu serialises every change of the merged tree: a change is several
	// calls on the upper (a copy-up, a whiteout, a rename), and readers,
	// which take mu shared, must see none of it half done. Writes and
	// reads through open files take no lock: they go to one file of one
	// layer.
	mu  sync.RWMutex
	tmp atomic.Uint64 // names in the work directory

	rootMeta meta // the tree root's bookkeeping, read once by New

	// lowerFixed says the lower never changes (it describes itself
	// immutable, a commit); lowerDirs then keeps, by lower directory,
	// the names of its subdirectories that a merged directory's link
	// count needed (lowerSubdirs).
	lowerFixed bool
	lowerDirs  sync.Map

	j *Journal // every change, for Journal().Since
}

var (
	_ mounts.OpenFileFS         = (*FS)(nil)
	_ mounts.TruncateFS         = (*FS)(nil)
	_ mounts.MkdirFS            = (*FS)(nil)
	_ mounts.RemoveFS           = (*FS)(nil)
	_ mounts.RenameFS           = (*FS)(nil)
	_ mounts.SymlinkFS          = (*FS)(nil)
	_ mounts.LinkFS             = (*FS)(nil)
	_ mounts.MknodFS            = (*FS)(nil)
	_ mounts.ChmodFS            = (*FS)(nil)
	_ mounts.ChownFS            = (*FS)(nil)
	_ mounts.ChtimesFS          = (*FS)(nil)
	_ mounts.SetXattrFS         = (*FS)(nil)
	_ mounts.StatFSer           = (*FS)(nil)
	_ mounts.SyncFS             = (*FS)(nil)
	_ mounts.StatDirFS          = (*FS)(nil)
	_ mounts.Describer          = (*FS)(nil)
	_ mounts.CapabilityReporter = (*FS)(nil)
)

// The upper layer's own layout: the merged tree's changes under treeDir,
// scratch space under workDir (emptied by New), and the origins of copied-up
// symlinks and special files, which cannot carry extended attributes, under
// metaDir.
const (
	treeDir = "tree"
	workDir = "work"
	metaDir = "meta"
)

// formatVersion is the layout and bookkeeping version recorded in the upper.
const formatVersion = "1"

// needed are the upper's verbs without which the overlay cannot work at
// all: copy-up, whiteouts and renames are made of them.
var needed = []struct {
	c    mounts.Capability
	name string
}{
	{mounts.CapWrite, "write"}, {mounts.CapMkdir, "mkdir"}, {mounts.CapRemove, "remove"},
	{mounts.CapRename, "rename"}, {mounts.CapSetXattr, "setxattr"}, {mounts.CapChmod, "chmod"},
	{mounts.CapChown, "chown"}, {mounts.CapChtimes, "chtimes"},
}

// New returns an overlay of upper over lower. lower is only ever read.
// upper must be empty (it is then initialised and records lower's identity)
// or hold an upper layer made over the same lower by an earlier New, which
// gives back the same tree with the same inode numbers. Anything else is
// refused with an error wrapping [ErrBadUpper] or [ErrOtherLower].
func New(ctx context.Context, lower, upper mounts.FS, opts Options) (*FS, error) {
	f := &FS{lower: lower, upper: upper, opts: opts, log: opts.Logger, j: newJournal(),
		lowerFixed: mounts.Describe(lower).Immutable}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	ucaps := mounts.Capabilities(upper)
	for _, n := range needed {
		if !ucaps.Has(n.c) {
			return nil, fmt.Errorf("%w: the upper mount cannot %s", ErrBadUpper, n.name)
		}
	}
	// What the overlay offers is what its upper can do: every change lands
	// there. Truncate works through a handle when the upper has no verb
	// for it; xattrs are always served, the lower's or the upper's.
	f.caps = ucaps&(mounts.CapMutating|mounts.CapStatFS) | mounts.CapTruncate | mounts.CapXattr | mounts.CapSetXattr
	// Searches narrow where the lower can (search.go).
	f.caps |= mounts.Capabilities(lower) & mounts.CapSearch
	f.caps |= ucaps & mounts.CapFreeze // see checkpoint.go
	f.id = opts.LowerID
	if f.id == "" {
		if c, ok := lower.(interface{ Commit() string }); ok {
			f.id = c.Commit()
		} else {
			f.id = mounts.Describe(lower).Source
		}
	}
	if err := f.open(ctx); err != nil {
		return nil, err
	}
	ua, err := upper.Stat(ctx, treeDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	if f.rootMeta, err = f.readMeta(ctx, treeDir, ua); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	return f, nil
}

// open initialises an empty upper or checks an existing one, and empties
// the work directory of what an interrupted operation left.
func (f *FS) open(ctx context.Context) error {
	ents, err := f.upper.ReadDir(ctx, ".")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	if len(ents) == 0 {
		return f.initialise(ctx)
	}
	format, err := mounts.GetXattr(ctx, f.upper, ".", xFormat)
	if err != nil {
		return fmt.Errorf("%w: it holds files but no overlay record", ErrBadUpper)
	}
	if string(format) != formatVersion {
		return fmt.Errorf("%w: overlay format %q, this program reads %q", ErrBadUpper, format, formatVersion)
	}
	id, err := mounts.GetXattr(ctx, f.upper, ".", xLower)
	if err != nil {
		return fmt.Errorf("%w: no record of its lower layer", ErrBadUpper)
	}
	if string(id) != f.id {
		return fmt.Errorf("%w: it was made over %s, not %s", ErrOtherLower, id, f.id)
	}
	for _, d := range []string{treeDir, workDir, metaDir} {
		if a, err := f.upper.Stat(ctx, d); err != nil || !a.IsDir() {
			return fmt.Errorf("%w: no %s directory", ErrBadUpper, d)
		}
	}
	left, err := f.upper.ReadDir(ctx, workDir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	for _, e := range left {
		// A half-made copy-up, whiteout or directory: never reachable
		// from the tree, so dropping it loses nothing acknowledged.
		f.log.Info("overlayfs: removing what an interrupted operation left", "name", e.Name)
		if err := mounts.RemoveAll(ctx, f.upper, mounts.Join(workDir, e.Name)); err != nil {
			return fmt.Errorf("%w: cleaning the work directory: %v", ErrBadUpper, err)
		}
	}
	return nil
}

// initialise lays out an empty upper: the tree's root is a copy of the
// lower's root, so the root keeps the lower's inode number and attributes.
func (f *FS) initialise(ctx context.Context) error {
	la, err := f.lower.Stat(ctx, ".")
	if err != nil {
		return fmt.Errorf("overlayfs: the lower root: %w", err)
	}
	for _, d := range []string{workDir, metaDir} {
		if err := mounts.Mkdir(ctx, f.upper, d, 0o700); err != nil {
			return fmt.Errorf("%w: %v", ErrBadUpper, err)
		}
	}
	tmp := f.tmpName()
	if err := mounts.Mkdir(ctx, f.upper, tmp, la.Mode.Perm()); err != nil {
		return fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	if err := f.settle(ctx, tmp, la, meta{origin: la.Ino, hasOrigin: la.Ino != 0}); err != nil {
		return fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	if err := mounts.Rename(ctx, f.upper, tmp, treeDir, 0); err != nil {
		return fmt.Errorf("%w: %v", ErrBadUpper, err)
	}
	// The record goes last: an upper without it was never finished, and
	// is refused rather than half trusted.
	for attr, v := range map[string]string{xLower: f.id, xFormat: formatVersion} {
		if err := mounts.SetXattr(ctx, f.upper, ".", attr, []byte(v), 0); err != nil {
			return fmt.Errorf("%w: %v", ErrBadUpper, err)
		}
	}
	return nil
}

// Describe says what the overlay is: the lower's type and source, mutable.
// An upper that other programs may change (a host directory) makes the
// overlay External; otherwise an overlay of immutable content changes only
// through this process, and is CopyOnWrite.
func (f *FS) Describe() mounts.Description {
	d := mounts.Describe(f.lower)
	external := mounts.Describe(f.upper).External
	return mounts.Description{Type: d.Type, Source: d.Source, External: external, CopyOnWrite: d.Immutable && !external}
}

// Capabilities reports the verbs the upper layer can honour (see New).
func (f *FS) Capabilities() mounts.Capability { return f.caps }

// LowerID is the lower layer's identity as recorded in the upper.
func (f *FS) LowerID() string { return f.id }

// tmpName is a fresh name in the work directory.
func (f *FS) tmpName() string {
	return workDir + "/" + strconv.FormatUint(f.tmp.Add(1), 36)
}

// up is the upper's name for an overlay name.
func up(name string) string {
	if name == "." {
		return treeDir
	}
	return treeDir + "/" + name
}

// lacks is the error for a verb the upper cannot do, as mounts' helpers
// report a missing one on a writable mount.
func (f *FS) lacks(c mounts.Capability, op, name string) error {
	if f.caps.Has(c) {
		return nil
	}
	return mounts.PathErr(op, name, mounts.ErrNotSupported)
}

// cause is what err says under its *fs.PathError, whose path names a layer's
// name, not the caller's.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// perr rewrites a layer's error into the caller's names; nil stays nil.
func perr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return mounts.PathErr(op, name, cause(err))
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// private reports whether name is one of Options.Private or below one.
func (f *FS) private(name string) bool {
	for _, p := range f.opts.Private {
		if name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// within reports whether name lies strictly below dir.
func within(name, dir string) bool {
	return dir == "." || strings.HasPrefix(name, dir+"/")
}
