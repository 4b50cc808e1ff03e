package policy

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// Rules are the path rules of a workspace, in workspace paths.
type Rules struct {
	// DenyRead patterns (gitignore syntax) name entries whose content may
	// not be read: Open, ReadLink, ReadDir of the entry and its "user."
	// extended attributes fail with EACCES. Stat and listings of the
	// parent still show it, as for a file you lack permission for.
	DenyRead []string
	// DenyWrite patterns name entries that may not be changed, created,
	// removed or renamed: every mutation fails with EACCES.
	DenyWrite []string
	// ReadOnly prefixes ("/repo", "/memory/notes") make every mutation at
	// or below them fail with EROFS, as a read-only mount does. "/" makes
	// the whole workspace read-only.
	ReadOnly []string
}

// RuleSet is a compiled, validated [Rules]. The zero of each part matches
// nothing.
type RuleSet struct {
	denyRead, denyWrite *matcher
	readOnly            []string // mount-relative names; "." is everything
}

// Compile validates r: every pattern must be well formed and every prefix
// a valid workspace path. Errors name the rule and the offending entry.
func Compile(r Rules) (*RuleSet, error) {
	rs := &RuleSet{}
	var err error
	if rs.denyRead, err = compile("deny_read", r.DenyRead); err != nil {
		return nil, err
	}
	if rs.denyWrite, err = compile("deny_write", r.DenyWrite); err != nil {
		return nil, err
	}
	for _, p := range r.ReadOnly {
		name := mounts.FromSlash(p)
		if !strings.HasPrefix(p, "/") || mounts.CheckPath("read_only", name) != nil {
			return nil, fmt.Errorf("read_only: invalid prefix %q: want an absolute workspace path such as /repo", p)
		}
		rs.readOnly = append(rs.readOnly, name)
	}
	return rs, nil
}

// Empty reports whether the rules change nothing.
func (rs *RuleSet) Empty() bool {
	return rs == nil || (rs.denyRead.empty() && rs.denyWrite.empty() && len(rs.readOnly) == 0)
}

// ReadOnlyAt reports whether a read_only prefix covers the workspace path
// p and everything below it (a mount point, say), so the tool face can
// describe that mount as read-only.
func (rs *RuleSet) ReadOnlyAt(p string) bool {
	return rs != nil && rs.underReadOnly(mounts.FromSlash(p))
}

func (rs *RuleSet) underReadOnly(name string) bool {
	for _, ro := range rs.readOnly {
		if ro == "." || name == ro || strings.HasPrefix(name, ro+"/") {
			return true
		}
	}
	return false
}

// Guard wraps fsys (the union: names are workspace names such as
// "repo/x.go") with the path rules rs. Every verb is declared; a verb
// fsys lacks fails as it would on fsys, and [mounts.Capabilities] reports
// fsys's capabilities (without the mutating ones when "/" is read-only).
// Open files are fsys's own: rules are checked when a name is used, so
// a file opened before is not affected, as in POSIX.
//
// # Behaviours of note
//
//   - Rules are on names. A hard link or rename made before the rules
//     applied, or a rename of an ancestor directory out of an anchored
//     pattern, moves content out of their reach: deny the directory itself
//     ("/repo/secrets/" rather than "/repo/secrets/**") so that renaming it
//     is refused too.
//   - Renaming or hard-linking a read-denied entry to a name that is not
//     read-denied is refused (EACCES): it would make the content readable.
//     Hard-linking a write-denied file is refused: writes through the new
//     name would change it.
//   - Only "user." extended attributes are content; "security." and
//     "system." ones (which ls and the kernel probe) stay readable.
func Guard(fsys mounts.FS, rs *RuleSet) mounts.FS {
	if rs == nil {
		rs = &RuleSet{}
	}
	return &guard{fsys: fsys, rs: rs}
}

// Freeze wraps fsys so that every mutation fails with EROFS while
// [mounts.Capabilities] still reports fsys's capabilities: the tool face
// of a dry run, which must list (and describe) the write tools it would
// offer but may never reach the tree with a change, whatever path a verb
// takes.
func Freeze(fsys mounts.FS) mounts.FS {
	return &guard{fsys: fsys, rs: &RuleSet{}, frozen: true}
}

var (
	_ mounts.OpenFileFS         = (*guard)(nil)
	_ mounts.StatDirFS          = (*guard)(nil)
	_ mounts.TruncateFS         = (*guard)(nil)
	_ mounts.MkdirFS            = (*guard)(nil)
	_ mounts.RemoveFS           = (*guard)(nil)
	_ mounts.RenameFS           = (*guard)(nil)
	_ mounts.SymlinkFS          = (*guard)(nil)
	_ mounts.MknodFS            = (*guard)(nil)
	_ mounts.LinkFS             = (*guard)(nil)
	_ mounts.ChmodFS            = (*guard)(nil)
	_ mounts.ChownFS            = (*guard)(nil)
	_ mounts.ChtimesFS          = (*guard)(nil)
	_ mounts.XattrFS            = (*guard)(nil)
	_ mounts.SetXattrFS         = (*guard)(nil)
	_ mounts.StatFSer           = (*guard)(nil)
	_ mounts.SyncFS             = (*guard)(nil)
	_ mounts.CapabilityReporter = (*guard)(nil)
	_ mounts.Describer          = (*guard)(nil)
	_ mounts.PathDescriber      = (*guard)(nil)
)

type guard struct {
	fsys   mounts.FS
	rs     *RuleSet
	frozen bool
}

func (g *guard) Capabilities() mounts.Capability {
	c := mounts.Capabilities(g.fsys)
	if !g.frozen && g.rs.underReadOnly(".") {
		c &^= mounts.CapMutating
	}
	return c
}

func (g *guard) Describe() mounts.Description              { return mounts.Describe(g.fsys) }
func (g *guard) DescribeAt(name string) mounts.Description { return mounts.DescribeAt(g.fsys, name) }

// isDir reports whether name is a directory, asking fsys only when a
// directory-only pattern ("build/") makes it matter.
func (g *guard) isDir(ctx context.Context, name string) bool {
	if !g.rs.denyRead.needsDirs() && !g.rs.denyWrite.needsDirs() {
		return false
	}
	a, err := g.fsys.Stat(ctx, name)
	return err == nil && a.IsDir()
}

// canRead returns the error for reading the content of name, or nil.
func (g *guard) canRead(op, name string, isDir bool) error {
	if g.rs.denyRead.match(name, isDir) {
		return mounts.PathErr(op, name, mounts.ErrDenied)
	}
	return nil
}

// canWrite returns the error for changing name, or nil. A read_only
// prefix wins over deny_write: EROFS says more than EACCES.
func (g *guard) canWrite(op, name string, isDir bool) error {
	if err := mounts.CheckPath(op, name); err != nil {
		return err
	}
	if g.frozen || g.rs.underReadOnly(name) {
		return mounts.PathErr(op, name, mounts.ErrReadOnly)
	}
	if g.rs.denyWrite.match(name, isDir) {
		return mounts.PathErr(op, name, mounts.ErrDenied)
	}
	return nil
}

// canMove checks the names of a rename or link: both must be writable, and
// read-denied content may not gain a readable name.
func (g *guard) canMove(ctx context.Context, op, from, to string) error {
	if err := mounts.CheckPath(op, to); err != nil {
		return err
	}
	dir := g.isDir(ctx, from)
	if err := g.canWrite(op, from, dir); err != nil {
		return err
	}
	if err := g.canWrite(op, to, dir); err != nil {
		return err
	}
	if g.rs.denyRead.match(from, dir) && !g.rs.denyRead.match(to, dir) {
		return mounts.PathErr(op, to, mounts.ErrDenied)
	}
	return nil
}

func (g *guard) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	return g.fsys.Stat(ctx, name)
}

func (g *guard) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if err := g.canRead("readdir", name, true); err != nil {
		return nil, err
	}
	return g.fsys.ReadDir(ctx, name)
}

// StatDir is ReadDir's check and the attributes Stat would give, as one
// call (mounts.StatDirFS).
func (g *guard) StatDir(ctx context.Context, name string) ([]mounts.DirEntry, []mounts.Attr, error) {
	if err := g.canRead("readdir", name, true); err != nil {
		return nil, nil, err
	}
	return mounts.StatDir(ctx, g.fsys, name)
}

func (g *guard) Open(ctx context.Context, name string) (mounts.File, error) {
	if err := g.canRead("open", name, false); err != nil {
		return nil, err
	}
	return g.fsys.Open(ctx, name)
}

func (g *guard) ReadLink(ctx context.Context, name string) (string, error) {
	if err := g.canRead("readlink", name, false); err != nil {
		return "", err
	}
	return g.fsys.ReadLink(ctx, name)
}

func (g *guard) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if !mounts.WantsWrite(flag) {
		return g.Open(ctx, name)
	}
	if err := g.canWrite("open", name, false); err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR) == os.O_RDWR { // O_RDWR reads too
		if err := g.canRead("open", name, false); err != nil {
			return nil, err
		}
	}
	return mounts.OpenFile(ctx, g.fsys, name, flag, perm)
}

func (g *guard) Truncate(ctx context.Context, name string, size int64) error {
	if err := g.canWrite("truncate", name, false); err != nil {
		return err
	}
	return mounts.Truncate(ctx, g.fsys, name, size)
}

func (g *guard) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if err := g.canWrite("mkdir", name, true); err != nil {
		return err
	}
	return mounts.Mkdir(ctx, g.fsys, name, perm)
}

func (g *guard) Unlink(ctx context.Context, name string) error {
	if err := g.canWrite("unlink", name, false); err != nil {
		return err
	}
	return mounts.Unlink(ctx, g.fsys, name)
}

func (g *guard) Rmdir(ctx context.Context, name string) error {
	if err := g.canWrite("rmdir", name, true); err != nil {
		return err
	}
	return mounts.Rmdir(ctx, g.fsys, name)
}

func (g *guard) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	if err := g.canMove(ctx, "rename", oldname, newname); err != nil {
		return err
	}
	if flags&mounts.RenameExchange != 0 {
		if err := g.canMove(ctx, "rename", newname, oldname); err != nil {
			return err
		}
	}
	return mounts.Rename(ctx, g.fsys, oldname, newname, flags)
}

func (g *guard) Symlink(ctx context.Context, target, name string) error {
	if err := g.canWrite("symlink", name, false); err != nil {
		return err
	}
	return mounts.Symlink(ctx, g.fsys, target, name)
}

func (g *guard) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	if err := g.canWrite("mknod", name, false); err != nil {
		return err
	}
	return mounts.Mknod(ctx, g.fsys, name, mode, dev)
}

func (g *guard) Link(ctx context.Context, oldname, newname string) error {
	if err := g.canMove(ctx, "link", oldname, newname); err != nil {
		return err
	}
	return mounts.Link(ctx, g.fsys, oldname, newname)
}

func (g *guard) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	if err := g.canWrite("chmod", name, g.isDir(ctx, name)); err != nil {
		return err
	}
	return mounts.Chmod(ctx, g.fsys, name, mode)
}

func (g *guard) Chown(ctx context.Context, name string, uid, gid int) error {
	if err := g.canWrite("chown", name, g.isDir(ctx, name)); err != nil {
		return err
	}
	return mounts.Chown(ctx, g.fsys, name, uid, gid)
}

func (g *guard) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	if err := g.canWrite("chtimes", name, g.isDir(ctx, name)); err != nil {
		return err
	}
	return mounts.Chtimes(ctx, g.fsys, name, atime, mtime)
}

func (g *guard) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	if strings.HasPrefix(attr, "user.") {
		if err := g.canRead("getxattr", name, g.isDir(ctx, name)); err != nil {
			return nil, err
		}
	}
	return mounts.GetXattr(ctx, g.fsys, name, attr)
}

func (g *guard) ListXattr(ctx context.Context, name string) ([]string, error) {
	return mounts.ListXattr(ctx, g.fsys, name)
}

func (g *guard) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	if err := g.canWrite("setxattr", name, g.isDir(ctx, name)); err != nil {
		return err
	}
	return mounts.SetXattr(ctx, g.fsys, name, attr, data, flags)
}

func (g *guard) RemoveXattr(ctx context.Context, name, attr string) error {
	if err := g.canWrite("removexattr", name, g.isDir(ctx, name)); err != nil {
		return err
	}
	return mounts.RemoveXattr(ctx, g.fsys, name, attr)
}

func (g *guard) StatFS(ctx context.Context) (mounts.FSStat, error) {
	return mounts.StatFS(ctx, g.fsys)
}

// Sync reveals and changes nothing, so no rule applies to it.
func (g *guard) Sync(ctx context.Context, name string) error {
	return mounts.Sync(ctx, g.fsys, name)
}
