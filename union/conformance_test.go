package union

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// The conformance suite checks that an error's Path is one of the names the
// caller passed, while the union deliberately reports absolute workspace
// paths ("/m/a.txt" for the name "m/a.txt"). view bridges the two: it
// presents the directory dir of a union as a mount, prefixing every name
// with dir on the way in and turning the union's workspace paths back into
// names relative to dir on the way out. Everything else passes through, so
// the suite checks the union's forwarding, capability reporting and file
// handling in full; TestErrorPathsAreWorkspacePaths checks the paths.
type view struct {
	u   *Union
	dir string // io/fs style: "." or "m"
}

var (
	_ mounts.OpenFileFS         = view{}
	_ mounts.TruncateFS         = view{}
	_ mounts.MkdirFS            = view{}
	_ mounts.RemoveFS           = view{}
	_ mounts.RenameFS           = view{}
	_ mounts.SymlinkFS          = view{}
	_ mounts.LinkFS             = view{}
	_ mounts.ChmodFS            = view{}
	_ mounts.MknodFS            = view{}
	_ mounts.ChownFS            = view{}
	_ mounts.ChtimesFS          = view{}
	_ mounts.SetXattrFS         = view{}
	_ mounts.StatFSer           = view{}
	_ mounts.CapabilityReporter = view{}
)

// in maps a name of the view to a union name. Invalid names stay invalid:
// "m" joined with "../x" is "m/../x".
func (v view) in(name string) string { return mounts.Join(v.dir, name) }

// out maps the union's error paths back. A path equal to a name the union
// was given (an invalid name is reported as given) is turned back into the
// view's name for it.
func (v view) out(err error, names ...string) error {
	pe, ok := err.(*fs.PathError)
	if !ok {
		return err
	}
	p := pe.Path
	for _, n := range names {
		if p == v.in(n) {
			return &fs.PathError{Op: pe.Op, Path: n, Err: pe.Err}
		}
	}
	root := mounts.ToSlash(v.dir)
	switch {
	case p == root:
		p = "."
	case strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/"):
		p = p[len(strings.TrimSuffix(root, "/"))+1:]
	}
	return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
}

func (v view) Capabilities() mounts.Capability { return v.u.Capabilities() }

func (v view) Stat(ctx context.Context, name string) (mounts.Attr, error) {
	a, err := v.u.Stat(ctx, v.in(name))
	return a, v.out(err, name)
}

func (v view) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	e, err := v.u.ReadDir(ctx, v.in(name))
	return e, v.out(err, name)
}

func (v view) Open(ctx context.Context, name string) (mounts.File, error) {
	f, err := v.u.Open(ctx, v.in(name))
	return f, v.out(err, name)
}

func (v view) ReadLink(ctx context.Context, name string) (string, error) {
	s, err := v.u.ReadLink(ctx, v.in(name))
	return s, v.out(err, name)
}

func (v view) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	f, err := v.u.OpenFile(ctx, v.in(name), flag, perm)
	if err != nil {
		return nil, v.out(err, name)
	}
	if w, ok := f.(mounts.WritableFile); ok {
		return viewFile{WritableFile: w, v: v, name: name}, nil
	}
	return f, nil
}

func (v view) Truncate(ctx context.Context, name string, size int64) error {
	return v.out(v.u.Truncate(ctx, v.in(name), size), name)
}

func (v view) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return v.out(v.u.Mkdir(ctx, v.in(name), perm), name)
}

func (v view) Unlink(ctx context.Context, name string) error {
	return v.out(v.u.Unlink(ctx, v.in(name)), name)
}

func (v view) Rmdir(ctx context.Context, name string) error {
	return v.out(v.u.Rmdir(ctx, v.in(name)), name)
}

func (v view) Rename(ctx context.Context, oldname, newname string, flags mounts.RenameFlags) error {
	return v.out(v.u.Rename(ctx, v.in(oldname), v.in(newname), flags), oldname, newname)
}

func (v view) Symlink(ctx context.Context, target, name string) error {
	return v.out(v.u.Symlink(ctx, target, v.in(name)), name)
}

func (v view) Mknod(ctx context.Context, name string, mode fs.FileMode, dev uint32) error {
	return v.out(v.u.Mknod(ctx, v.in(name), mode, dev), name)
}

func (v view) Link(ctx context.Context, oldname, newname string) error {
	return v.out(v.u.Link(ctx, v.in(oldname), v.in(newname)), oldname, newname)
}

func (v view) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return v.out(v.u.Chmod(ctx, v.in(name), mode), name)
}

func (v view) Chown(ctx context.Context, name string, uid, gid int) error {
	return v.out(v.u.Chown(ctx, v.in(name), uid, gid), name)
}

func (v view) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return v.out(v.u.Chtimes(ctx, v.in(name), atime, mtime), name)
}

func (v view) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	b, err := v.u.GetXattr(ctx, v.in(name), attr)
	return b, v.out(err, name)
}

func (v view) ListXattr(ctx context.Context, name string) ([]string, error) {
	l, err := v.u.ListXattr(ctx, v.in(name))
	return l, v.out(err, name)
}

func (v view) SetXattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	return v.out(v.u.SetXattr(ctx, v.in(name), attr, data, flags), name)
}

func (v view) RemoveXattr(ctx context.Context, name, attr string) error {
	return v.out(v.u.RemoveXattr(ctx, v.in(name), attr), name)
}

func (v view) StatFS(ctx context.Context) (mounts.FSStat, error) {
	// The union reports usage for the whole workspace, named "/".
	st, err := v.u.StatFS(ctx)
	if pe, ok := err.(*fs.PathError); ok && pe.Path == "/" {
		return st, &fs.PathError{Op: pe.Op, Path: ".", Err: pe.Err}
	}
	return st, err
}

// viewFile maps the error paths of a writable file's operations back too.
type viewFile struct {
	mounts.WritableFile
	v    view
	name string
}

func (f viewFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.ReadAt(p, off)
	return n, f.v.out(err, f.name)
}

func (f viewFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	return n, f.v.out(err, f.name)
}

func (f viewFile) Truncate(size int64) error { return f.v.out(f.WritableFile.Truncate(size), f.name) }

func TestConformanceRootMount(t *testing.T) {
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return view{u: mustNew(t, map[string]mounts.FS{"/": newMem()}), dir: "."}
	})
}

func TestConformanceNestedMount(t *testing.T) {
	// The mount under test sits at /agent/notes, below another memory
	// mount, next to a third: the workspace the integration tests use.
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		u := mustNew(t, map[string]mounts.FS{"/memory": newMem(), "/agent": newMem(), "/agent/notes": newMem()})
		return view{u: u, dir: "agent/notes"}
	})
}

func TestConformanceReadOnlyMount(t *testing.T) {
	src := newMem()
	files := map[string]string{"README.md": "# hi\n", "src/a.go": "package a\n", "src/deep/b.txt": "b"}
	ctx := context.Background()
	for name, data := range files {
		d, _ := mounts.Split(name)
		if err := mounts.MkdirAll(ctx, src, d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := mounts.WriteFile(ctx, src, name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Symlink(ctx, "src/a.go", "link"); err != nil {
		t.Fatal(err)
	}
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return view{u: mustNew(t, map[string]mounts.FS{"/repo": readOnly{src}}), dir: "repo"}
	}, mountstest.Expect(files), mountstest.ExpectSymlinks(map[string]string{"link": "src/a.go"}), mountstest.Caps(0))
}
