// Package union composes several mounts into one workspace namespace, and is
// itself a [mounts.FS]: the tree both faces (the kernel adapter and the agent
// tools) serve.
//
// # Resolution
//
// A union is built from a table of absolute prefixes ("/repo", "/agent",
// "/agent/skills", or "/" for a root mount). Names given to the union are
// io/fs style and relative to the workspace root ("." is "/", "repo/a.go" is
// "/repo/a.go"). A name resolves to the mount with the longest prefix that
// matches it on whole path components, so "/repo" serves "/repo/a.go" but not
// "/repository". Nested mounts are allowed: "/agent/skills" wins over
// "/agent" below it.
//
// # Mount points and synthetic directories
//
// A mount point shadows a same-named entry of its parent mount: the parent's
// listing shows the mount point as a directory, and Stat of it reports the
// child mount's root. Directories on the way to a mount point that no mount
// provides are synthetic: read-only, owned by the serving process, dated when
// the union was made, listing only the mount points and synthetic directories
// below them. That covers "/" when nothing is mounted there, "/agent" when only
// "/agent/skills" is mounted, and an intermediate directory that a parent
// mount lacks at construction ("/agent/skills" over a "/" mount that has no
// "agent"): rather than hide the nested mount, the union shows the missing
// directory as synthetic, and it keeps shadowing the parent mount afterwards.
//
// Creating anything in a synthetic directory fails with [mounts.ErrReadOnly].
// Removing or renaming a mount point, a synthetic directory, or a directory
// of a mount that contains a mount point fails with [mounts.ErrBusy], as the
// kernel refuses to unlink a mount point. Rename and Link across two mounts
// fail with [mounts.ErrCrossMount] (EXDEV), so mv falls back to copying.
//
// # Capabilities
//
// The union declares every capability interface of the contract and forwards
// each call to the mount that resolves the name through the helpers of
// package mounts, so a read-only mount answers [mounts.ErrReadOnly] and a
// writable mount lacking a verb [mounts.ErrNotSupported]. [Union.Capabilities]
// reports the union of the mounts' capabilities: the workspace offers a verb
// if any mount does. [Union.Mounts] answers the mount table
// (mounts.MountTabler), for the faces to show.
//
// # Inode numbers
//
// Numbers from different mounts never collide: the top byte of every inode
// number is the mount's 1-based position in prefix order and the low 56 bits
// are the mount's own number (a mount that needs more than 56 bits loses
// the excess and may collide with itself). Synthetic directories use top
// byte 0 and a hash of their path. A mount's 0 ("unknown") stays 0.
//
// # Errors
//
// Every error is a *fs.PathError whose Path is a name in the caller's terms,
// as for every mount and as io/fs's Sub does it: the union name the caller
// passed ("repo/src/a.go"), or for a mount's error the mount's path put back
// under the mount point, so that a name the mount reports for the caller's
// is the caller's. A mount's path that is not a valid name (a host path) is
// replaced by the caller's name, so nothing foreign leaks, and an error
// that is not a *fs.PathError is wrapped in one. Invalid names fail with
// fs.ErrInvalid before resolution, with the name as given. A face that
// shows paths to people (the tool face) writes them absolute itself.
//
// # Open files
//
// Files are wrapped so that Stat reports the same rewritten inode number as
// [Union.Stat] (fstat and stat must agree) and so that *fs.PathError values
// from ReadAt, WriteAt and friends carry union names. Other errors,
// io.EOF in particular, pass through unchanged. A file opened for writing
// stays a [mounts.WritableFile].
package union

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// maxMounts is how many mounts fit in the top byte of an inode number.
const maxMounts = 255

const (
	inoShift = 56
	inoMask  = 1<<inoShift - 1
)

// Compile-time proof that the union declares the whole contract.
var (
	_ mounts.FS                 = (*Union)(nil)
	_ mounts.OpenFileFS         = (*Union)(nil)
	_ mounts.OpenWithFS         = (*Union)(nil)
	_ mounts.StatDirFS          = (*Union)(nil)
	_ mounts.TruncateFS         = (*Union)(nil)
	_ mounts.MkdirFS            = (*Union)(nil)
	_ mounts.RemoveFS           = (*Union)(nil)
	_ mounts.RenameFS           = (*Union)(nil)
	_ mounts.SymlinkFS          = (*Union)(nil)
	_ mounts.MknodFS            = (*Union)(nil)
	_ mounts.LinkFS             = (*Union)(nil)
	_ mounts.ChmodFS            = (*Union)(nil)
	_ mounts.ChownFS            = (*Union)(nil)
	_ mounts.ChtimesFS          = (*Union)(nil)
	_ mounts.XattrFS            = (*Union)(nil)
	_ mounts.SetXattrFS         = (*Union)(nil)
	_ mounts.StatFSer           = (*Union)(nil)
	_ mounts.SyncFS             = (*Union)(nil)
	_ mounts.CapabilityReporter = (*Union)(nil)
	_ mounts.Describer          = (*Union)(nil)
	_ mounts.PathDescriber      = (*Union)(nil)
	_ mounts.MountTabler        = (*Union)(nil)
	_ mounts.PageOfferer        = (*Union)(nil)
)

// Union is a workspace namespace composed of mounts. It is immutable after
// [New] and safe for concurrent use.
type Union struct {
	mounts []*mount          // sorted by prefix
	byName map[string]*mount // keyed by mount.name
	// synth maps each synthetic directory to its inode number.
	synth map[string]uint64
	// children lists, for every directory that has them, the mount points
	// and synthetic directories directly inside it, sorted.
	children map[string][]string
	// busy holds every mount point and every ancestor of one: names that
	// cannot be removed or renamed without tearing the table apart.
	busy map[string]bool
	// longest is the length of the longest mount point or synthetic
	// name: locate skips the map lookups for longer ancestors.
	longest  int
	caps     mounts.Capability
	created  time.Time
	uid, gid uint32
}

type mount struct {
	prefix string // "/agent/skills", or "/"
	name   string // the prefix io/fs style: "agent/skills", or "."
	fsys   mounts.FS
	index  uint64 // 1-based position in prefix order
}

// New builds a union from a table of absolute prefixes. It fails, naming the
// prefix, when a prefix is relative or unclean ("repo", "/repo/", "/a//b",
// "/a/../b"), when its file system is nil, when a directory on the way to
// it is not a directory in the mount that holds it ("/memory/f.txt/x" with
// f.txt a file of "/memory"), or when there are more than 255 mounts. A
// table with duplicate prefixes cannot be expressed as a map; callers that
// parse specs detect duplicates themselves.
//
// New stats the parent mounts of nested mount points with
// context.Background(); no other call is made to a mount.
func New(table map[string]mounts.FS) (*Union, error) {
	if len(table) > maxMounts {
		return nil, fmt.Errorf("union: %d mounts, at most %d are supported", len(table), maxMounts)
	}
	u := &Union{
		byName:   make(map[string]*mount, len(table)),
		synth:    make(map[string]uint64),
		children: make(map[string][]string),
		busy:     make(map[string]bool),
		created:  time.Now(),
		uid:      uint32(os.Getuid()),
		gid:      uint32(os.Getgid()),
	}
	prefixes := make([]string, 0, len(table))
	for p := range table {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	for i, p := range prefixes {
		name, err := prefixName(p)
		if err != nil {
			return nil, err
		}
		fsys := table[p]
		if fsys == nil {
			return nil, fmt.Errorf("union: mount %s: nil file system", p)
		}
		m := &mount{prefix: p, name: name, fsys: fsys, index: uint64(i + 1)}
		u.mounts = append(u.mounts, m)
		u.byName[name] = m
		u.caps |= mounts.Capabilities(fsys) &^ mounts.CapFreeze // a service's, on the mount itself
	}
	if u.byName["."] == nil {
		u.synth["."] = syntheticIno(".")
	}
	for _, m := range u.mounts {
		u.busy[m.name] = true
		for d := m.name; d != "."; {
			parent, base := mounts.Split(d)
			if !slices.Contains(u.children[parent], base) {
				u.children[parent] = append(u.children[parent], base)
			}
			u.busy[parent] = true
			d = parent
		}
	}
	for _, kids := range u.children {
		slices.Sort(kids)
	}
	ctx := context.Background()
	for _, m := range u.mounts {
		if err := u.placeAncestors(ctx, m); err != nil {
			return nil, err
		}
	}
	u.longest = len(".") // the root is always looked up
	for name := range u.busy {
		u.longest = max(u.longest, len(name))
	}
	return u, nil
}

// prefixName validates a table key and returns it io/fs style.
func prefixName(p string) (string, error) {
	if p == "/" {
		return ".", nil
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("union: mount prefix %q is not absolute", p)
	}
	name := p[1:]
	if name == "." || mounts.CheckPath("mount", name) != nil {
		return "", fmt.Errorf("union: mount prefix %q is not a clean absolute path (no empty, \".\" or \"..\" components, no trailing slash, no control characters, components of at most %d bytes)", p, mounts.MaxNameLen)
	}
	return name, nil
}

// placeAncestors decides, for each directory on the way to m, whether a
// mount serves it or it is synthetic. Walking down from the root: under no
// mount, a directory is synthetic; inside a mount, it must be a directory
// there, and one the mount lacks becomes synthetic (with everything below
// it) so that m stays reachable.
func (u *Union) placeAncestors(ctx context.Context, m *mount) error {
	var owner *mount
	rel := "."
	missing := false
	for _, a := range ancestors(m.name) {
		if mm := u.byName[a]; mm != nil {
			owner, rel, missing = mm, ".", false
			continue
		}
		if owner == nil || missing {
			u.synth[a] = syntheticIno(a)
			continue
		}
		_, base := mounts.Split(a)
		rel = mounts.Join(rel, base)
		attr, err := owner.fsys.Stat(ctx, rel)
		switch {
		case err == nil && attr.IsDir():
		case err == nil:
			return fmt.Errorf("union: mount %s: %s is not a directory in the mount at %s", m.prefix, mounts.PathOf(a), owner.prefix)
		case errors.Is(err, fs.ErrNotExist):
			u.synth[a] = syntheticIno(a)
			missing = true
		default:
			return fmt.Errorf("union: mount %s: cannot stat %s in the mount at %s: %w", m.prefix, mounts.PathOf(a), owner.prefix, unwrapPath(err))
		}
	}
	return nil
}

// ancestors returns the proper ancestors of a valid name, root first:
// ancestors("a/b/c") is [".", "a", "a/b"].
func ancestors(name string) []string {
	if name == "." {
		return nil
	}
	out := []string{"."}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			out = append(out, name[:i])
		}
	}
	return out
}

func syntheticIno(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(mounts.PathOf(name)))
	if v := h.Sum64() & inoMask; v != 0 {
		return v
	}
	return 1
}

// ino moves a mount's inode number into the mount's own range.
func (m *mount) ino(ino uint64) uint64 {
	if ino == 0 {
		return 0
	}
	return m.index<<inoShift | ino&inoMask
}

// kind is what a union name turned out to be.
type kind int

const (
	// inMount: served by mount m under the mount-relative name rel.
	inMount kind = iota
	// synthetic: a synthetic directory.
	synthetic
	// missing: inside a synthetic directory but not one of its children.
	missing
)

type target struct {
	kind kind
	m    *mount
	rel  string
}

// locate resolves a valid name. Walking up from the name itself, the first
// mount point found is the longest matching prefix. Reaching a synthetic
// directory first means the name is that directory or does not exist: a
// synthetic directory holds nothing but its listed children, which are
// themselves mount points or synthetic.
func (u *Union) locate(name string) target {
	d := name
	for {
		if len(d) > u.longest {
			d, _ = mounts.Split(d)
			continue
		}
		if m := u.byName[d]; m != nil {
			return target{kind: inMount, m: m, rel: mounts.Rel(name, d)}
		}
		if u.isSynthetic(d) {
			if d == name {
				return target{kind: synthetic}
			}
			return target{kind: missing}
		}
		if d == "." {
			// Unreachable: "." is always a mount point or synthetic.
			return target{kind: missing}
		}
		d, _ = mounts.Split(d)
	}
}

// Mounts returns the mount table sorted by prefix (mounts.MountTabler):
// each mount's prefix, its own description, and what it can do. A mount
// that is itself a composition is one entry.
func (u *Union) Mounts() []mounts.MountInfo {
	out := make([]mounts.MountInfo, len(u.mounts))
	for i, m := range u.mounts {
		out[i] = mounts.MountInfo{
			Prefix:      m.prefix,
			Description: mounts.Describe(m.fsys),
			Writable:    mounts.Writable(m.fsys),
			Caps:        mounts.Capabilities(m.fsys),
		}
	}
	return out
}

// OfferPages registers sink with every mount that offers pages
// (mounts.PageOfferer), each page's name translated into the union's: a
// page offered under a name that another mount's mount point covers (the
// mount's own file, hidden below a nested mount) names what the union
// does not serve from that mount, and is dropped. It reports whether any
// mount offers pages.
func (u *Union) OfferPages(sink mounts.PageSink) bool {
	offers := false
	for _, m := range u.mounts {
		var s mounts.PageSink
		if sink != nil {
			s = func(name string, data []byte) {
				full := mounts.Join(m.name, name)
				if !mounts.ValidPath(full) {
					return
				}
				if t := u.locate(full); t.kind == inMount && t.m == m {
					sink(full, data)
				}
			}
		}
		if mounts.OfferPages(m.fsys, s) {
			offers = true
		}
	}
	return offers
}

// Capabilities reports every verb family some mount offers.
func (u *Union) Capabilities() mounts.Capability { return u.caps }

// syntheticDescription describes synthetic directories (and names that do
// not exist inside them).
var syntheticDescription = mounts.Description{Type: "synthetic", Source: "union"}

// Describe describes the union as a whole: immutable only when every mount
// is, external when any mount is.
func (u *Union) Describe() mounts.Description {
	d := mounts.Description{
		Type:      "union",
		Source:    fmt.Sprintf("union of %d mounts", len(u.mounts)),
		Immutable: len(u.mounts) > 0,
	}
	for _, m := range u.mounts {
		md := mounts.Describe(m.fsys)
		d.Immutable = d.Immutable && md.Immutable
		d.External = d.External || md.External
	}
	return d
}

// DescribeAt describes the mount serving name, or a synthetic directory.
func (u *Union) DescribeAt(name string) mounts.Description {
	if !mounts.ValidPath(name) {
		return syntheticDescription
	}
	t := u.locate(name)
	if t.kind != inMount {
		return syntheticDescription
	}
	return mounts.DescribeAt(t.m.fsys, t.rel)
}

// fail builds an error of the union itself for name.
func fail(op, name string, err error) error {
	return mounts.PathErr(op, name, err)
}

// rewrite moves an error of mount m, returned for the union name name, into
// the caller's names: the mount's path under the mount point. A path the
// mount reports that is not a valid mount-relative name is replaced by
// name, so nothing foreign (a host path) can leak through.
func (m *mount) rewrite(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*fs.PathError); ok {
		p := name
		if mounts.ValidPath(pe.Path) {
			p = mounts.Join(m.name, pe.Path)
		}
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return mounts.PathErr(op, name, err)
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// syntheticAttr is what Stat reports for a synthetic directory.
func (u *Union) syntheticAttr(name string) mounts.Attr {
	return mounts.Attr{
		Mode:  fs.ModeDir | 0o555,
		Ino:   u.synth[name],
		Nlink: uint32(2 + len(u.children[name])),
		Uid:   u.uid,
		Gid:   u.gid,
		Atime: u.created,
		Mtime: u.created,
		Ctime: u.created,
	}
}

// Stat returns the attributes of name (lstat). A mount point reports the
// root of the mount.
func (u *Union) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if err := mounts.CheckPath("stat", name); err != nil {
		return mounts.Attr{}, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return u.syntheticAttr(name), nil
	case missing:
		return mounts.Attr{}, fail("stat", name, fs.ErrNotExist)
	}
	a, err := t.m.fsys.Stat(ctx, t.rel)
	if err != nil {
		return mounts.Attr{}, t.m.rewrite("stat", name, err)
	}
	a.Ino = t.m.ino(a.Ino)
	return a, nil
}

// ReadDir lists name. A directory that holds mount points or synthetic
// directories lists them in place of any same-named entry of its own mount.
func (u *Union) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if err := mounts.CheckPath("readdir", name); err != nil {
		return nil, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return u.specialEntries(ctx, name, nil), nil
	case missing:
		return nil, fail("readdir", name, fs.ErrNotExist)
	}
	ents, err := t.m.fsys.ReadDir(ctx, t.rel)
	if err != nil {
		return nil, t.m.rewrite("readdir", name, err)
	}
	kids := u.children[name]
	// Copy: the mount's slice may be shared with its cache.
	out := make([]mounts.DirEntry, 0, len(ents)+len(kids))
	for _, e := range ents {
		if slices.Contains(kids, e.Name) {
			continue
		}
		e.Ino = t.m.ino(e.Ino)
		out = append(out, e)
	}
	if len(kids) == 0 {
		return out, nil
	}
	out = u.specialEntries(ctx, name, out)
	slices.SortFunc(out, func(a, b mounts.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// StatDir lists name with the attributes of its entries
// (mounts.StatDirFS). A directory of one mount with no mount point in it
// is the mount's own StatDir when it has one; anywhere else it is ReadDir
// and a Stat per entry, an entry gone meanwhile left out.
func (u *Union) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	if err := mounts.CheckPath("readdir", name); err != nil {
		return nil, nil, err
	}
	t := u.locate(name)
	if sd, ok := t.m.fsysStatDir(); ok && t.kind == inMount && len(u.children[name]) == 0 {
		ents, attrs, err := sd.StatDir(ctx, t.rel)
		if err != nil {
			return nil, nil, t.m.rewrite("readdir", name, err)
		}
		if len(attrs) != len(ents) {
			return mounts.StatEach(ctx, u, name) // a broken mount: ask again
		}
		// Copy: the mount's slices may be shared with its cache.
		outE := make([]mounts.DirEntry, len(ents))
		outA := make([]mounts.Attr, len(attrs))
		for i := range ents {
			outE[i], outA[i] = ents[i], attrs[i]
			outE[i].Ino = t.m.ino(ents[i].Ino)
			outA[i].Ino = t.m.ino(attrs[i].Ino)
		}
		return outE, outA, nil
	}
	return mounts.StatEach(ctx, u, name)
}

// fsysStatDir returns the mount's StatDir, if it has one. m may be nil.
func (m *mount) fsysStatDir() (mounts.StatDirFS, bool) {
	if m == nil {
		return nil, false
	}
	sd, ok := m.fsys.(mounts.StatDirFS)
	return sd, ok
}

// specialEntries appends the mount points and synthetic directories inside
// dir to out. A mount point's inode number is its root's, as Stat says.
func (u *Union) specialEntries(ctx context.Context, dir string, out []mounts.DirEntry) []mounts.DirEntry {
	for _, kid := range u.children[dir] {
		full := mounts.Join(dir, kid)
		e := mounts.DirEntry{Name: kid, Type: fs.ModeDir}
		if m := u.byName[full]; m != nil {
			if a, err := m.fsys.Stat(ctx, "."); err == nil {
				e.Ino = m.ino(a.Ino)
			}
		} else {
			e.Ino = u.synth[full]
		}
		out = append(out, e)
	}
	return out
}

// Open opens a regular file for reading.
func (u *Union) Open(ctx context.Context, name string) (mounts.File, error) {
	return u.OpenWith(ctx, name, mounts.OpenOptions{})
}

// OpenWith is Open with the caller's options, passed on to the mount that
// serves name ([mounts.OpenWith]).
func (u *Union) OpenWith(ctx context.Context, name string, o mounts.OpenOptions) (mounts.File, error) {
	if err := mounts.CheckPath("open", name); err != nil {
		return nil, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return nil, fail("open", name, mounts.ErrIsDir)
	case missing:
		return nil, fail("open", name, fs.ErrNotExist)
	}
	f, err := mounts.OpenWith(ctx, t.m.fsys, t.rel, o)
	if err != nil {
		return nil, t.m.rewrite("open", name, err)
	}
	return wrapFile(f, t.m, name, false), nil
}

// ReadLink returns the target of a symlink.
func (u *Union) ReadLink(ctx context.Context, name string) (string, error) {
	if err := mounts.CheckPath("readlink", name); err != nil {
		return "", err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return "", fail("readlink", name, fs.ErrInvalid)
	case missing:
		return "", fail("readlink", name, fs.ErrNotExist)
	}
	s, err := t.m.fsys.ReadLink(ctx, t.rel)
	if err != nil {
		return "", t.m.rewrite("readlink", name, err)
	}
	return s, nil
}

// existing resolves a name that an operation changes in place (truncate,
// chmod, setxattr, ...): nothing in a synthetic directory can change.
func (u *Union) existing(op, name string) (target, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return target{}, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return t, fail(op, name, mounts.ErrReadOnly)
	case missing:
		return t, fail(op, name, fs.ErrNotExist)
	}
	return t, nil
}

// absent is the error for creating a name that locate found missing: a
// synthetic directory takes no new entries, and below a name that does not
// exist there is nothing to create in.
func (u *Union) absent(op, name string) error {
	if dir, _ := mounts.Split(name); u.isSynthetic(dir) {
		return fail(op, name, mounts.ErrReadOnly)
	}
	return fail(op, name, fs.ErrNotExist)
}

func (u *Union) isSynthetic(name string) bool {
	_, ok := u.synth[name]
	return ok
}

// creatable resolves a name an operation creates (mkdir, symlink, the new
// name of a link): a mount point or synthetic directory already exists, and
// a synthetic directory takes no new entries.
func (u *Union) creatable(op, name string) (target, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return target{}, err
	}
	t := u.locate(name)
	switch {
	case t.kind == synthetic, t.kind == inMount && t.rel == ".":
		return t, fail(op, name, fs.ErrExist)
	case t.kind == missing:
		return t, u.absent(op, name)
	}
	return t, nil
}

// removable resolves a name an operation removes or renames away: mount
// points, synthetic directories and directories holding mount points are
// busy.
func (u *Union) removable(op, name string) (target, error) {
	if err := mounts.CheckPath(op, name); err != nil {
		return target{}, err
	}
	if u.busy[name] {
		return target{}, fail(op, name, mounts.ErrBusy)
	}
	t := u.locate(name)
	if t.kind == missing {
		return t, fail(op, name, fs.ErrNotExist)
	}
	return t, nil
}

// OpenFile opens name with os.OpenFile flag semantics. Read-only flags are
// Open.
func (u *Union) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if !mounts.WantsWrite(flag) {
		return u.Open(ctx, name)
	}
	if err := mounts.CheckPath("open", name); err != nil {
		return nil, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			return nil, fail("open", name, fs.ErrExist)
		}
		return nil, fail("open", name, mounts.ErrIsDir)
	case missing:
		if flag&os.O_CREATE != 0 {
			return nil, u.absent("open", name)
		}
		return nil, fail("open", name, fs.ErrNotExist)
	}
	f, err := mounts.OpenFile(ctx, t.m.fsys, t.rel, flag, perm)
	if err != nil {
		return nil, t.m.rewrite("open", name, err)
	}
	return wrapFile(f, t.m, name, true), nil
}

// Truncate changes the size of a file.
func (u *Union) Truncate(ctx context.Context, name string, size int64) error {
	if err := mounts.CheckPath("truncate", name); err != nil {
		return err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return fail("truncate", name, mounts.ErrIsDir)
	case missing:
		return fail("truncate", name, fs.ErrNotExist)
	}
	return t.m.rewrite("truncate", name, mounts.Truncate(ctx, t.m.fsys, t.rel, size))
}

// Mkdir creates a directory.
func (u *Union) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	t, err := u.creatable("mkdir", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("mkdir", name, mounts.Mkdir(ctx, t.m.fsys, t.rel, perm))
}

// Unlink removes a non-directory.
func (u *Union) Unlink(ctx context.Context, name string) error {
	t, err := u.removable("unlink", name)
	if err != nil {
		return err
	}
	if t.kind == synthetic {
		// Unreachable: synthetic directories are busy.
		return fail("unlink", name, mounts.ErrBusy)
	}
	return t.m.rewrite("unlink", name, mounts.Unlink(ctx, t.m.fsys, t.rel))
}

// Rmdir removes an empty directory.
func (u *Union) Rmdir(ctx context.Context, name string) error {
	t, err := u.removable("rmdir", name)
	if err != nil {
		return err
	}
	if t.kind == synthetic {
		return fail("rmdir", name, mounts.ErrBusy)
	}
	return t.m.rewrite("rmdir", name, mounts.Rmdir(ctx, t.m.fsys, t.rel))
}

// Rename renames within one mount. Across mounts it fails with
// mounts.ErrCrossMount; a busy name on either side fails with
// mounts.ErrBusy; a new name in a synthetic directory with
// mounts.ErrReadOnly.
func (u *Union) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	from, err := u.removable("rename", oldname)
	if err != nil {
		return err
	}
	if err := mounts.CheckPath("rename", newname); err != nil {
		return err
	}
	if u.busy[newname] {
		return fail("rename", newname, mounts.ErrBusy)
	}
	to := u.locate(newname)
	if to.kind == missing {
		return u.absent("rename", newname)
	}
	if from.m != to.m {
		return fail("rename", oldname, mounts.ErrCrossMount)
	}
	return from.m.rewrite("rename", oldname, mounts.Rename(ctx, from.m.fsys, from.rel, to.rel, flags))
}

// Symlink creates name as a symlink to target, stored verbatim.
func (u *Union) Symlink(ctx context.Context, target, name string) error {
	t, err := u.creatable("symlink", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("symlink", name, mounts.Symlink(ctx, t.m.fsys, target, t.rel))
}

// Mknod creates a special file (mknod(2)) in the mount serving name.
func (u *Union) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	t, err := u.creatable("mknod", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("mknod", name, mounts.Mknod(ctx, t.m.fsys, t.rel, mode, dev))
}

// Link creates newname as a hard link to oldname, within one mount.
func (u *Union) Link(ctx context.Context, oldname, newname string) error {
	if err := mounts.CheckPath("link", oldname); err != nil {
		return err
	}
	from := u.locate(oldname)
	switch {
	case from.kind == missing:
		return fail("link", oldname, fs.ErrNotExist)
	case from.kind == synthetic, from.rel == ".":
		// link(2) refuses directories with EPERM.
		return fail("link", oldname, fs.ErrPermission)
	}
	to, err := u.creatable("link", newname)
	if err != nil {
		return err
	}
	if from.m != to.m {
		return fail("link", newname, mounts.ErrCrossMount)
	}
	return from.m.rewrite("link", newname, mounts.Link(ctx, from.m.fsys, from.rel, to.rel))
}

// Chmod changes permission bits. A mount point changes its mount's root.
func (u *Union) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	t, err := u.existing("chmod", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("chmod", name, mounts.Chmod(ctx, t.m.fsys, t.rel, mode))
}

// Chown changes owners; -1 leaves an id unchanged.
func (u *Union) Chown(ctx context.Context, name string, uid, gid int) error {
	t, err := u.existing("chown", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("chown", name, mounts.Chown(ctx, t.m.fsys, t.rel, uid, gid))
}

// Chtimes sets access and modification times.
func (u *Union) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	t, err := u.existing("chtimes", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("chtimes", name, mounts.Chtimes(ctx, t.m.fsys, t.rel, atime, mtime))
}

// Sync makes name durable in the mount that serves it. A synthetic
// directory holds nothing to sync.
func (u *Union) Sync(ctx context.Context, name string) error {
	if err := mounts.CheckPath("sync", name); err != nil {
		return err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return nil
	case missing:
		return fail("sync", name, fs.ErrNotExist)
	}
	return t.m.rewrite("sync", name, mounts.Sync(ctx, t.m.fsys, t.rel))
}

// GetXattr reads an extended attribute. Synthetic directories have none.
func (u *Union) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	if err := mounts.CheckPath("getxattr", name); err != nil {
		return nil, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return nil, fail("getxattr", name, mounts.ErrNoAttr)
	case missing:
		return nil, fail("getxattr", name, fs.ErrNotExist)
	}
	data, err := mounts.GetXattr(ctx, t.m.fsys, t.rel, attr)
	if err != nil {
		return nil, t.m.rewrite("getxattr", name, err)
	}
	return data, nil
}

// ListXattr lists extended attribute names. Synthetic directories have none.
func (u *Union) ListXattr(ctx context.Context, name string) ([]string, error) {
	if err := mounts.CheckPath("listxattr", name); err != nil {
		return nil, err
	}
	t := u.locate(name)
	switch t.kind {
	case synthetic:
		return nil, nil
	case missing:
		return nil, fail("listxattr", name, fs.ErrNotExist)
	}
	attrs, err := mounts.ListXattr(ctx, t.m.fsys, t.rel)
	if err != nil {
		return nil, t.m.rewrite("listxattr", name, err)
	}
	return attrs, nil
}

// SetXattr writes an extended attribute.
func (u *Union) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	t, err := u.existing("setxattr", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("setxattr", name, mounts.SetXattr(ctx, t.m.fsys, t.rel, attr, data, flags))
}

// RemoveXattr removes an extended attribute.
func (u *Union) RemoveXattr(ctx context.Context, name, attr string) error {
	t, err := u.existing("removexattr", name)
	if err != nil {
		return err
	}
	return t.m.rewrite("removexattr", name, mounts.RemoveXattr(ctx, t.m.fsys, t.rel, attr))
}

// StatFS reports usage for the whole workspace. With one mount it is that
// mount's. With several it is the first writable mount's, in prefix order,
// that reports usage, else the first mount's that does: the free space a
// writer can actually fill. Sums would add up space no single write can
// use (a host disk plus a memory quota). Per-mount figures are not
// offered: the union hands out no mount, since a caller holding one would
// be past every decorator stacked over the union.
func (u *Union) StatFS(ctx context.Context) (mounts.FSStat, error) {
	var pick *mount
	for _, m := range u.mounts {
		c := mounts.Capabilities(m.fsys)
		if !c.Has(mounts.CapStatFS) {
			continue
		}
		if c&mounts.CapMutating != 0 {
			pick = m
			break
		}
		if pick == nil {
			pick = m
		}
	}
	if pick == nil {
		return mounts.FSStat{}, fail("statfs", ".", mounts.ErrNotSupported)
	}
	st, err := mounts.StatFS(ctx, pick.fsys)
	if err != nil {
		return mounts.FSStat{}, pick.rewrite("statfs", pick.name, err)
	}
	return st, nil
}
