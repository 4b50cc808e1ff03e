// Package skillsfs serves a directory of agent skills as a read-only mount
// with a generated catalog.
//
// # The source
//
// Every directory at the top of the source is a skill: NAME/SKILL.md,
// beginning with YAML front matter between two "---" lines, with
//
//   - name: equal to the directory name, 1 to 64 lowercase letters, digits
//     and hyphens;
//   - description: non-empty, at most 1024 characters;
//   - any other keys, which are kept ([Skill.Extra]).
//
// [New] validates every skill and refuses the mount if any is invalid, with
// an error wrapping [ErrInvalidSkill] that names each bad skill directory and
// the rule it breaks. Files at the top of the source (a README, a LICENSE),
// symlinks and hidden directories (.git) are served as they are but are not
// skills; a top-level SKILLS.md is refused, because the mount generates that
// name.
//
// # What it serves
//
// The source is any mount ([mounts.FS]) the caller gives [New]: a read-only
// host directory (confinement is then the host mount's: see package hostfs),
// one commit of a git repository, a memory tree. The skills mount serves it
// read-only, whatever verbs the source has, and live: scripts keep their exec
// bits, and edits to a live source show at once. At the root the mount adds
// SKILLS.md, generated whenever it is stat'ed or opened from the source as it
// is then: one entry per skill with its name, description and the workspace
// path of its SKILL.md (under [Options.Prefix]). A skill that became invalid
// after the mount is left out of the catalog and logged.
//
// The mount has no write capability at all.
package skillsfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
)

// ErrInvalidSkill is wrapped by Open's error when a skill breaks a rule.
var ErrInvalidSkill = errors.New("invalid skill")

// ErrBadSource is wrapped by New's error when the source cannot be listed or
// holds a SKILLS.md of its own.
var ErrBadSource = errors.New("bad skills source")

// CatalogName is the generated catalog at the root of the mount.
const CatalogName = "SKILLS.md"

// DefaultPrefix is where the mount usually sits in the workspace.
const DefaultPrefix = "/agent/skills"

// catalogIno is the catalog's inode number. The host mount numbers its
// entries below 2^48 or with bit 55 set, the memory mount counts up from 1,
// and the git mount hashes ids and paths into 64 bits: this number is never
// one of the first two, and one value in 2^64 of the third.
const catalogIno = 1 << 54

// Options configure a skills mount.
type Options struct {
	// Prefix is the mount's workspace path, used in the catalog's paths.
	// Empty means DefaultPrefix.
	Prefix string
	// Logger receives skills that turn invalid after the mount; nil is
	// silent.
	Logger *slog.Logger
}

// FS is a skills mount. It is safe for concurrent use.
type FS struct {
	src    mounts.FS
	prefix string
	log    *slog.Logger
}

var (
	_ mounts.FS                 = (*FS)(nil)
	_ mounts.XattrFS            = (*FS)(nil)
	_ mounts.StatFSer           = (*FS)(nil)
	_ mounts.Describer          = (*FS)(nil)
	_ mounts.CapabilityReporter = (*FS)(nil)
)

// New validates the skills in src and serves them, read-only. The caller
// keeps src and closes it after the skills mount is done with it.
func New(src mounts.FS, opts Options) (*FS, error) {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasPrefix(prefix, "/") || path.Clean(prefix) != prefix {
		return nil, fmt.Errorf("skills prefix %q must be an absolute, clean workspace path", prefix)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FS{src: src, prefix: prefix, log: log}
	ctx := context.Background()
	if _, err := src.Stat(ctx, CatalogName); err == nil {
		return nil, fmt.Errorf("%w: it has a %s at its root, a name the skills mount generates", ErrBadSource, CatalogName)
	}
	_, bad, err := f.scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSource, err)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	return f, nil
}

// Describe reports the mount type; the source is never the path. External
// is the source's: a host directory can change under the mount, a commit
// cannot.
func (f *FS) Describe() mounts.Description {
	return mounts.Description{Type: "skills", Source: "skills", External: mounts.Describe(f.src).External}
}

// readSide is what the skills mount offers of its source's verbs: reading
// attributes and statfs, never a change.
const readSide = mounts.CapXattr | mounts.CapStatFS

// Capabilities reports the read-side verbs the source has.
func (f *FS) Capabilities() mounts.Capability { return mounts.Capabilities(f.src) & readSide }

// Skills returns the valid skills of the source as it is now, sorted by name.
func (f *FS) Skills(ctx context.Context) ([]Skill, error) {
	skills, _, err := f.scan(ctx)
	return skills, err
}

// scan reads every skill of the source. It returns the valid skills, sorted,
// and one error per invalid one (wrapping ErrInvalidSkill and naming its
// directory); err is for a source that cannot be listed at all.
func (f *FS) scan(ctx context.Context) (skills []Skill, bad []error, err error) {
	ents, err := f.src.ReadDir(ctx, ".")
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		// Hidden directories (.git of a checked-out skills repository)
		// are not skills; they are served like any file.
		if !e.Type.IsDir() || strings.HasPrefix(e.Name, ".") {
			continue
		}
		s, err := f.readSkill(ctx, e.Name)
		if err != nil {
			bad = append(bad, fmt.Errorf("%w %q: %w", ErrInvalidSkill, e.Name, err))
			continue
		}
		skills = append(skills, s)
	}
	return skills, bad, nil
}

// readSkill reads and validates dir/SKILL.md.
func (f *FS) readSkill(ctx context.Context, dir string) (Skill, error) {
	if !validName(dir) {
		return Skill{}, errBadDirName(dir)
	}
	name := dir + "/SKILL.md"
	file, err := f.src.Open(ctx, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Skill{}, errors.New("no SKILL.md")
	case errors.Is(err, mounts.ErrLoop):
		return Skill{}, errors.New("SKILL.md is a symlink; it must be a regular file")
	case err != nil:
		return Skill{}, fmt.Errorf("SKILL.md cannot be read: %w", unwrapPath(err))
	}
	defer file.Close()
	buf := make([]byte, maxFrontMatter)
	n, err := file.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Skill{}, fmt.Errorf("SKILL.md cannot be read: %w", unwrapPath(err))
	}
	return parseSkill(dir, buf[:n])
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// catalog renders SKILLS.md from the source as it is now. Its time is the
// newest modification among the root and the skills' SKILL.md files, so it
// only looks changed when a skill did; it belongs to the root's owner.
func (f *FS) catalog(ctx context.Context, op string) ([]byte, mounts.Attr, error) {
	skills, bad, err := f.scan(ctx)
	if err != nil {
		return nil, mounts.Attr{}, mounts.PathErr(op, CatalogName, unwrapPath(err))
	}
	for _, e := range bad {
		f.log.Warn("skill left out of the catalog", "err", e)
	}
	var mtime time.Time
	var uid, gid uint32
	if a, err := f.src.Stat(ctx, "."); err == nil {
		mtime, uid, gid = a.Mtime, a.Uid, a.Gid
	}
	var b bytes.Buffer
	b.WriteString("# Skills\n\n")
	b.WriteString("Each skill below is a directory holding a SKILL.md with instructions, and maybe scripts\n")
	b.WriteString("and reference files. Read a skill's SKILL.md before you use it.\n")
	if len(skills) == 0 {
		b.WriteString("\nNo skills are installed.\n")
	}
	for _, s := range skills {
		if a, err := f.src.Stat(ctx, s.Name+"/SKILL.md"); err == nil && a.Mtime.After(mtime) {
			mtime = a.Mtime
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\nPath: %s\n", s.Name, strings.Join(strings.Fields(s.Description), " "),
			path.Join(f.prefix, s.Name, "SKILL.md"))
	}
	return b.Bytes(), mounts.Attr{
		Mode: 0o444, Size: int64(b.Len()), Ino: catalogIno, Nlink: 1,
		Uid: uid, Gid: gid, Atime: mtime, Mtime: mtime, Ctime: mtime,
	}, nil
}

// Stat returns the attributes of name; the catalog's size is that of a
// rendering made now.
func (f *FS) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	if name != CatalogName {
		return f.src.Stat(ctx, name)
	}
	_, a, err := f.catalog(ctx, "stat")
	return a, err
}

// ReadDir lists a directory; the root also lists the catalog.
func (f *FS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	ents, err := f.src.ReadDir(ctx, name)
	if err != nil || name != "." {
		return ents, err
	}
	ents = slices.DeleteFunc(ents, func(e mounts.DirEntry) bool { return e.Name == CatalogName })
	i, _ := slices.BinarySearchFunc(ents, CatalogName, func(e mounts.DirEntry, n string) int {
		return strings.Compare(e.Name, n)
	})
	return slices.Insert(ents, i, mounts.DirEntry{Name: CatalogName, Ino: catalogIno}), nil
}

// Open opens a file; the catalog is rendered at open and does not change
// while open.
func (f *FS) Open(ctx context.Context, name string) (mounts.File, error) {
	if name != CatalogName {
		return f.src.Open(ctx, name)
	}
	data, a, err := f.catalog(ctx, "open")
	if err != nil {
		return nil, err
	}
	return &catalogFile{r: bytes.NewReader(data), attr: a}, nil
}

// ReadLink returns a symlink's target.
func (f *FS) ReadLink(ctx context.Context, name string) (string, error) {
	if name == CatalogName {
		return "", mounts.PathErr("readlink", name, fs.ErrInvalid)
	}
	return f.src.ReadLink(ctx, name)
}

// GetXattr reads a user.* attribute of the source; the catalog has none.
func (f *FS) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	if name == CatalogName {
		return nil, mounts.PathErr("getxattr", name, mounts.ErrNoAttr)
	}
	return mounts.GetXattr(ctx, f.src, name, attr)
}

// ListXattr lists the user.* attributes of the source; the catalog has none.
func (f *FS) ListXattr(ctx context.Context, name string) ([]string, error) {
	if name == CatalogName {
		return nil, nil
	}
	return mounts.ListXattr(ctx, f.src, name)
}

// StatFS reports the file system of the source.
func (f *FS) StatFS(ctx context.Context) (mounts.FSStat, error) { return mounts.StatFS(ctx, f.src) }

// catalogFile is an open rendering of the catalog.
type catalogFile struct {
	r    *bytes.Reader
	attr mounts.Attr
}

func (c *catalogFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, mounts.PathErr("read", CatalogName, fs.ErrInvalid)
	}
	return c.r.ReadAt(p, off)
}

func (c *catalogFile) Stat() (mounts.Attr, error) { return c.attr, nil }
func (c *catalogFile) Close() error               { return nil }
