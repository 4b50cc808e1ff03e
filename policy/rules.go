package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

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
		name := mounts.NameOf(p)
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

// DeniesReads reports whether some rule denies reading (deny_read).
func (rs *RuleSet) DeniesReads() bool { return rs != nil && !rs.denyRead.empty() }

// DeniesWrites reports whether some rule denies changing (deny_write or
// read_only).
func (rs *RuleSet) DeniesWrites() bool {
	return rs != nil && (!rs.denyWrite.empty() || len(rs.readOnly) > 0)
}

// ReadOnlyAt reports whether a read_only prefix covers the workspace path
// p and everything below it (a mount point, say), so the tool face can
// describe that mount as read-only.
func (rs *RuleSet) ReadOnlyAt(p string) bool {
	return rs != nil && rs.underReadOnly(mounts.NameOf(p))
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
// The mount table ([mounts.Mounts]) shows a mount covered by a read_only
// prefix as read-only, without its mutating capabilities. Open files are
// fsys's own: rules are checked when a name is used, so a file opened
// before is not affected, as in POSIX. It is a [mounts.Intercept] wrapper.
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
	g := &guard{fsys: fsys, rs: rs}
	return mounts.Intercept(fsys, mounts.Interceptor{Call: g.check, Capabilities: g.capabilities, Mounts: g.mounts})
}

// Freeze wraps fsys so that every mutation fails with EROFS while
// [mounts.Capabilities] still reports fsys's capabilities: the tool face
// of a dry run, which must list (and describe) the write tools it would
// offer but may never reach the tree with a change, whatever path a verb
// takes. The mount table is fsys's, as the tools describe what they
// would do.
func Freeze(fsys mounts.FS) mounts.FS {
	g := &guard{fsys: fsys, rs: &RuleSet{}, frozen: true}
	return mounts.Intercept(fsys, mounts.Interceptor{Call: g.check})
}

// guard decides about each call by the rules; fsys is what it wraps, for
// the Stat that tells a directory.
type guard struct {
	fsys   mounts.FS
	rs     *RuleSet
	frozen bool
}

func (g *guard) capabilities(c mounts.Capability) mounts.Capability {
	if !g.frozen && g.rs.underReadOnly(".") {
		c &^= mounts.CapMutating
	}
	return c
}

// mounts corrects the mount table: a mount whose mount point a read_only
// prefix covers cannot change anything through the guard.
func (g *guard) mounts(table []mounts.MountInfo) []mounts.MountInfo {
	for i := range table {
		if g.rs.ReadOnlyAt(table[i].Prefix) {
			table[i].Writable = false
			table[i].Caps &^= mounts.CapMutating
		}
	}
	return table
}

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

// check is the guard's decision about one call: nil lets it through
// unchanged. Stat, ListXattr, StatFS and Sync reveal no content and
// change nothing, so no rule applies to them.
func (g *guard) check(ctx context.Context, c mounts.Call) (mounts.Call, error) {
	return c, g.verdict(ctx, c)
}

func (g *guard) verdict(ctx context.Context, c mounts.Call) error {
	switch c.Op {
	case mounts.OpReadDir, mounts.OpStatDir:
		return g.canRead("readdir", c.Name, true)
	case mounts.OpOpen:
		return g.canRead("open", c.Name, false)
	case mounts.OpOffer:
		// A page read ahead is content read: a denied file's must not
		// reach the kernel's page cache, where any reader finds it.
		return g.canRead("open", c.Name, false)
	case mounts.OpReadLink:
		return g.canRead("readlink", c.Name, false)
	case mounts.OpOpenFile:
		if err := g.canWrite("open", c.Name, false); err != nil {
			return err
		}
		if c.Flag&(os.O_WRONLY|os.O_RDWR) == os.O_RDWR { // O_RDWR reads too
			return g.canRead("open", c.Name, false)
		}
		return nil
	case mounts.OpTruncate, mounts.OpUnlink, mounts.OpSymlink, mounts.OpMknod:
		return g.canWrite(c.Op.String(), c.Name, false)
	case mounts.OpMkdir, mounts.OpRmdir:
		return g.canWrite(c.Op.String(), c.Name, true)
	case mounts.OpRename:
		if err := g.canMove(ctx, "rename", c.Name, c.NewName); err != nil {
			return err
		}
		if c.RenameFlags&mounts.RenameExchange != 0 {
			return g.canMove(ctx, "rename", c.NewName, c.Name)
		}
		return nil
	case mounts.OpLink:
		return g.canMove(ctx, "link", c.Name, c.NewName)
	case mounts.OpChmod, mounts.OpChown, mounts.OpChtimes, mounts.OpSetXattr, mounts.OpRemoveXattr:
		return g.canWrite(c.Op.String(), c.Name, g.isDir(ctx, c.Name))
	case mounts.OpGetXattr:
		if strings.HasPrefix(c.Attr, "user.") {
			return g.canRead("getxattr", c.Name, g.isDir(ctx, c.Name))
		}
	}
	return nil
}

// CanRead returns nil when the rules let the content of the workspace path
// p ("/memory/notes.md") be read, and otherwise the error the faces give
// for it: a [*fs.PathError] wrapping [mounts.ErrDenied]. A service that
// reads the mounts below the faces (a checkpoint's diff) asks it for every
// name whose content it would show.
func (rs *RuleSet) CanRead(p string, isDir bool) error {
	if rs == nil {
		return nil
	}
	g := guard{rs: rs}
	return byRule(g.canRead("read", mounts.NameOf(p), isDir), "deny_read")
}

// CanWrite returns nil when the rules let the workspace path p be changed
// (made, written, removed), and otherwise the error the faces give for it:
// [mounts.ErrReadOnly] under a read_only prefix, [mounts.ErrDenied] for a
// deny_write pattern. A service that changes the mounts below the faces (a
// checkpoint's restore) asks it for every name it would change.
func (rs *RuleSet) CanWrite(p string, isDir bool) error {
	if rs == nil {
		return nil
	}
	g := guard{rs: rs}
	return byRule(g.canWrite("write", mounts.NameOf(p), isDir), "deny_write")
}

// byRule names the rule in a refusal of the guard's: "denied by policy
// (deny_write)", "read-only by policy (read_only)". errors.Is sees the
// same sentinel.
func byRule(err error, denyRule string) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	r := ruleError{err: pe.Err, text: pe.Err.Error() + " (" + denyRule + ")"}
	if errors.Is(pe.Err, mounts.ErrReadOnly) {
		r.text = "read-only by policy (read_only)"
	}
	return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: &r}
}

type ruleError struct {
	err  error
	text string
}

func (e *ruleError) Error() string { return e.text }
func (e *ruleError) Unwrap() error { return e.err }
