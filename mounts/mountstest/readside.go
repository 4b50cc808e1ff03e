package mountstest

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
)

// fixture is the tree the read side checks.
type fixture struct {
	files map[string]string
	links map[string]string
	dirs  []string // excluding "."
}

// names lists every name of the fixture, parents included, sorted.
func (f *fixture) names() []string {
	set := map[string]bool{}
	add := func(name string) {
		for name != "." && !set[name] {
			set[name] = true
			name, _ = mounts.Split(name)
		}
	}
	for n := range f.files {
		add(n)
	}
	for n := range f.links {
		add(n)
	}
	for _, n := range f.dirs {
		add(n)
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// seedStep is one creation of the seeded tree, in order: "dir/b.txt" comes
// before "dir/a.txt" so a listing in creation order is caught.
type seedStep struct {
	kind byte // 'd' dir, 'f' file, 'l' symlink
	name string
	data string // content, or symlink target
}

var seedSteps = []seedStep{
	{'f', "hello.txt", "hello, world\n"},
	{'f', "empty", ""},
	{'f', "with space", " "},
	{'f', "naïve café.txt", "ünïcödé\n"},
	{'d', "dir", ""},
	{'f', "dir/b.txt", "b\n"},
	{'f', "dir/a.txt", "a\n"},
	{'d', "dir/nested", ""},
	// More than mounts.ReadFile's 64 KiB chunk, and not a multiple of it.
	{'f', "dir/nested/deep.txt", strings.Repeat("0123456789abcdef", 5000) + "tail"},
	{'d', "emptydir", ""},
	{'l', "dir/link", "../hello.txt"},
	{'l', "dirlink", "dir/nested"},
}

// seed builds as much of the seeded tree as the mount's write verbs allow.
func seed(t *testing.T, x target, caps mounts.Capability) *fixture {
	t.Helper()
	fx := &fixture{files: map[string]string{}, links: map[string]string{}}
	made := map[string]bool{".": true}
	for _, s := range seedSteps {
		if dir, _ := mounts.Split(s.name); !made[dir] {
			continue
		}
		switch {
		case s.kind == 'd' && caps.Has(mounts.CapMkdir):
			require.NoErrorf(t, x.mkdir(s.name, 0o755), "seed: mkdir %q", s.name)
			fx.dirs = append(fx.dirs, s.name)
		case s.kind == 'f' && caps.Has(mounts.CapWrite):
			writeFile(t, x, s.name, s.data, 0o644)
			fx.files[s.name] = s.data
		case s.kind == 'l' && caps.Has(mounts.CapSymlink):
			if _, ok := fx.files["hello.txt"]; !ok {
				continue
			}
			if s.name == "dirlink" && !made["dir/nested"] {
				continue
			}
			require.NoErrorf(t, x.symlink(s.data, s.name), "seed: symlink %q", s.name)
			fx.links[s.name] = s.data
		default:
			continue
		}
		made[s.name] = true
	}
	return fx
}

func testReadSide(t *testing.T, e *env) {
	x := e.x
	var fx *fixture
	if e.caps&mounts.CapMutating != 0 {
		fx = seed(t, x, e.caps)
	} else {
		fx = &fixture{files: e.cfg.files, links: e.cfg.links, dirs: e.cfg.dirs}
	}
	names := fx.names()
	assert.NoError(t, fstest.TestFS(x.ioFS(), names...), "fstest.TestFS")

	for name, want := range fx.files {
		assertContent(t, x, name, want)
		a, err := x.stat(name)
		if assert.NoErrorf(t, err, "Stat(%q)", name) {
			assert.Truef(t, a.Mode.IsRegular(), "Stat(%q).Mode = %v, want a regular file", name, a.Mode)
			assert.Equalf(t, int64(len(want)), a.Size, "Stat(%q).Size", name)
		}
	}
	for name, want := range fx.links {
		got, err := x.readLink(name)
		if assert.NoErrorf(t, err, "ReadLink(%q)", name) {
			assert.Equalf(t, want, got, "ReadLink(%q)", name)
		}
		a, err := x.stat(name)
		if assert.NoErrorf(t, err, "Stat(%q)", name) {
			assert.Equalf(t, fs.ModeSymlink, a.Mode.Type(), "Stat(%q) must not follow the link", name)
			assert.Equalf(t, int64(len(want)), a.Size, "Stat(%q).Size of a symlink is its target's length", name)
		}
	}
	for _, name := range append([]string{"."}, fx.dirs...) {
		assert.Truef(t, mustStat(t, x, name).IsDir(), "%q is not a directory", name)
	}
	for _, name := range append([]string{"."}, names...) {
		a, err := x.stat(name)
		require.NoErrorf(t, err, "Stat(%q)", name)
		if a.IsDir() {
			checkListing(t, x, name)
		}
	}

	file := firstOf(fx.files)
	t.Run("Errors", func(t *testing.T) {
		_, err := x.stat("no-such-name")
		wantErr(t, x, err, fs.ErrNotExist, "no-such-name")
		_, err = x.readDir("no-such-name")
		wantErr(t, x, err, fs.ErrNotExist, "no-such-name")
		_, err = x.readFile("no-such-name")
		wantErr(t, x, err, fs.ErrNotExist, "no-such-name")
		_, err = x.readLink("no-such-name")
		wantErr(t, x, err, fs.ErrNotExist, "no-such-name")
		_, err = x.readFile(".")
		wantErr(t, x, err, mounts.ErrIsDir, ".")
		if file == "" {
			return
		}
		_, err = x.stat(file + "/x")
		wantErr(t, x, err, mounts.ErrNotDir, file+"/x")
		_, err = x.readDir(file)
		wantErr(t, x, err, mounts.ErrNotDir, file)
		_, err = x.readLink(file)
		wantErr(t, x, err, fs.ErrInvalid, file)
	})
	if file != "" {
		t.Run("ReadAt", func(t *testing.T) { checkReadAt(t, x, file, fx.files[file]) })
	}
	if lx, ok := x.(*libTarget); ok {
		t.Run("MountOnly", func(t *testing.T) { checkMountOnly(t, lx, fx) })
	}
}

// checkListing: sorted, deterministic, no "." or "..", types agree with Stat.
func checkListing(t *testing.T, x target, dir string) {
	t.Helper()
	first, err := x.readDir(dir)
	require.NoErrorf(t, err, "ReadDir(%q)", dir)
	second, err := x.readDir(dir)
	require.NoErrorf(t, err, "ReadDir(%q) again", dir)
	assert.Equalf(t, first, second, "ReadDir(%q) is not deterministic", dir)
	names := make([]string, len(first))
	for i, ent := range first {
		names[i] = ent.Name
		assert.NotContainsf(t, []string{"", ".", ".."}, ent.Name, "ReadDir(%q) lists %q", dir, ent.Name)
		assert.NotContainsf(t, ent.Name, "/", "ReadDir(%q) entry name", dir)
		a, err := x.stat(mounts.Join(dir, ent.Name))
		if assert.NoErrorf(t, err, "Stat of listed entry %q in %q", ent.Name, dir) {
			assert.Equalf(t, a.Mode.Type(), ent.Type, "ReadDir(%q) type of %q disagrees with Stat", dir, ent.Name)
			if ent.Ino != 0 {
				assert.Equalf(t, a.Ino, ent.Ino, "ReadDir(%q) Ino of %q disagrees with Stat", dir, ent.Name)
			}
		}
	}
	assert.Truef(t, slices.IsSorted(names), "ReadDir(%q) not sorted: %q", dir, names)

	// A mount that lists with attributes must list what ReadDir and
	// Stat say.
	if lx, ok := x.(*libTarget); ok {
		if ents, attrs, has, err := lx.statDir(dir); has {
			if assert.NoErrorf(t, err, "StatDir(%q)", dir) {
				assert.Equalf(t, first, ents, "StatDir(%q) entries disagree with ReadDir", dir)
				if assert.Lenf(t, attrs, len(ents), "StatDir(%q) attributes", dir) {
					for i, ent := range ents {
						a, err := x.stat(mounts.Join(dir, ent.Name))
						if err == nil {
							assert.Equalf(t, a, attrs[i], "StatDir(%q) attributes of %q disagree with Stat", dir, ent.Name)
						}
					}
				}
			}
		}
	}
}

func checkReadAt(t *testing.T, x target, name, content string) {
	h, err := x.openFile(name, os.O_RDONLY, 0)
	require.NoError(t, err, "open for reading")
	defer h.Close()
	a, err := h.Stat()
	if assert.NoError(t, err, "fstat") {
		assert.Equal(t, int64(len(content)), a.Size, "fstat size")
	}
	buf := make([]byte, 4)
	n, err := h.ReadAt(buf, int64(len(content))+10)
	assert.Equal(t, 0, n, "ReadAt past the end")
	assert.ErrorIs(t, err, io.EOF, "ReadAt past the end")
	if len(content) > 0 {
		// The last byte and beyond: a short read ends with io.EOF.
		n, err = h.ReadAt(buf, int64(len(content))-1)
		assert.Equal(t, 1, n, "ReadAt across the end")
		assert.ErrorIs(t, err, io.EOF, "ReadAt across the end")
		assert.Equal(t, content[len(content)-1], buf[0], "ReadAt across the end")
	}
}

// checkMountOnly checks what only the contract says (the kernel follows
// links and opens directories for reading).
func checkMountOnly(t *testing.T, x *libTarget, fx *fixture) {
	_, err := x.open(".")
	wantErr(t, x, err, mounts.ErrIsDir, ".")
	if link := firstOf(fx.links); link != "" {
		_, err := x.open(link)
		wantErr(t, x, err, mounts.ErrLoop, link)
	}
	for _, name := range fx.names() {
		a := mustStat(t, x, name)
		if a.Ino != 0 {
			// Stable for the life of the mount.
			assert.Equalf(t, a.Ino, mustStat(t, x, name).Ino, "Ino of %q changed between two Stats", name)
		}
	}
}

func firstOf(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// badNames are names no mount may accept, with the sentinel they fail with.
var badNames = []struct {
	name string
	want error
}{
	{"", fs.ErrInvalid},
	{"/", fs.ErrInvalid},
	{"/x", fs.ErrInvalid},
	{"a//b", fs.ErrInvalid},
	{"a/../b", fs.ErrInvalid},
	{"a/./b", fs.ErrInvalid},
	{"..", fs.ErrInvalid},
	{"../a", fs.ErrInvalid},
	{"a/..", fs.ErrInvalid},
	{"./a", fs.ErrInvalid},
	{"a/", fs.ErrInvalid},
	{"a\x00b", fs.ErrInvalid},
	{"a\nb", fs.ErrInvalid},
	{"a\tb", fs.ErrInvalid},
	{"a\x7fb", fs.ErrInvalid},
	{"\x1b[31m", fs.ErrInvalid},
	{longName(mounts.MaxNameLen + 1), mounts.ErrNameTooLong},
	{"dir/" + longName(mounts.MaxNameLen+1), mounts.ErrNameTooLong},
}

// testBadNames calls every read method and every write method present with
// each bad name; all must fail with the right sentinel and change nothing.
func testBadNames(t *testing.T, e *env) {
	x := e.x.(*libTarget)
	// An existing file for the two-name verbs, so only the bad name can be
	// the reason they fail.
	const f = "file"
	if e.caps.Has(mounts.CapWrite) {
		writeFile(t, x, f, "data", 0o644)
	}
	before := snapshot(t, x)
	at := time.Unix(1_000_000_000, 0)
	type call struct {
		op  string
		cap mounts.Capability // 0: always present
		run func(bad string) error
	}
	calls := []call{
		{"Stat", 0, func(b string) error { _, err := x.stat(b); return err }},
		{"ReadDir", 0, func(b string) error { _, err := x.readDir(b); return err }},
		{"Open", 0, func(b string) error { _, err := x.open(b); return err }},
		{"ReadLink", 0, func(b string) error { _, err := x.readLink(b); return err }},
		{"OpenFile(create)", mounts.CapWrite, func(b string) error {
			_, err := x.openFile(b, os.O_WRONLY|os.O_CREATE, 0o644)
			return err
		}},
		{"Truncate", mounts.CapTruncate, func(b string) error { return x.truncate(b, 0) }},
		{"Mkdir", mounts.CapMkdir, func(b string) error { return x.mkdir(b, 0o755) }},
		{"Unlink", mounts.CapRemove, func(b string) error { return x.unlink(b) }},
		{"Rmdir", mounts.CapRemove, func(b string) error { return x.rmdir(b) }},
		{"Rename(bad, file)", mounts.CapRename, func(b string) error { return x.rename(b, f, 0) }},
		{"Rename(file, bad)", mounts.CapRename, func(b string) error { return x.rename(f, b, 0) }},
		{"Symlink", mounts.CapSymlink, func(b string) error { return x.symlink("target", b) }},
		{"Link(file, bad)", mounts.CapLink, func(b string) error { return x.link(f, b) }},
		{"Link(bad, new)", mounts.CapLink, func(b string) error { return x.link(b, "new") }},
		{"Chmod", mounts.CapChmod, func(b string) error { return x.chmod(b, 0o600) }},
		{"Chown", mounts.CapChown, func(b string) error { return x.chown(b, -1, -1) }},
		{"Chtimes", mounts.CapChtimes, func(b string) error { return x.chtimes(b, at, at) }},
		{"GetXattr", mounts.CapXattr, func(b string) error { _, err := x.getXattr(b, "user.a"); return err }},
		{"ListXattr", mounts.CapXattr, func(b string) error { _, err := x.listXattr(b); return err }},
		{"SetXattr", mounts.CapSetXattr, func(b string) error { return x.setXattr(b, "user.a", []byte("v"), 0) }},
		{"RemoveXattr", mounts.CapSetXattr, func(b string) error { return x.removeXattr(b, "user.a") }},
	}
	for _, c := range calls {
		if !e.caps.Has(c.cap) {
			continue
		}
		for _, bn := range badNames {
			err := c.run(bn.name)
			if !assert.Errorf(t, err, "%s(%q) succeeded", c.op, bn.name) {
				continue
			}
			if !assert.ErrorIsf(t, err, bn.want, "%s(%q)", c.op, bn.name) {
				continue
			}
			var pe *fs.PathError
			assert.Truef(t, errors.As(err, &pe), "%s(%q): %v (%T) is not a *fs.PathError", c.op, bn.name, err, err)
		}
	}
	assert.Equal(t, before, snapshot(t, x), "bad names changed the tree")
}

// absentCase is one call of a verb family the mount lacks.
type absentCase struct {
	name string
	// present reports whether the mount has the verb (truncate by name
	// works with either TruncateFS or OpenFileFS).
	present func(c mounts.Capability) bool
	// needs is the fixture the call acts on: 'f' an existing file, 'd' an
	// existing directory other than the root, 0 nothing.
	needs byte
	run   func(x target, f, d string) ([]string, error)
}

func has(c mounts.Capability) func(mounts.Capability) bool {
	return func(have mounts.Capability) bool { return have.Has(c) }
}

var absentCases = []absentCase{
	{"open-wronly", has(mounts.CapWrite), 'f', func(x target, f, _ string) ([]string, error) {
		_, err := x.openFile(f, os.O_WRONLY, 0)
		return []string{f}, err
	}},
	{"open-rdwr", has(mounts.CapWrite), 'f', func(x target, f, _ string) ([]string, error) {
		_, err := x.openFile(f, os.O_RDWR, 0)
		return []string{f}, err
	}},
	{"open-create", has(mounts.CapWrite), 0, func(x target, _, _ string) ([]string, error) {
		_, err := x.openFile("new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		return []string{"new"}, err
	}},
	{"truncate", func(c mounts.Capability) bool { return c&(mounts.CapTruncate|mounts.CapWrite) != 0 }, 'f',
		func(x target, f, _ string) ([]string, error) { return []string{f}, x.truncate(f, 0) }},
	{"mkdir", has(mounts.CapMkdir), 0, func(x target, _, _ string) ([]string, error) {
		return []string{"new"}, x.mkdir("new", 0o755)
	}},
	{"unlink", has(mounts.CapRemove), 'f', func(x target, f, _ string) ([]string, error) {
		return []string{f}, x.unlink(f)
	}},
	{"rmdir", has(mounts.CapRemove), 'd', func(x target, _, d string) ([]string, error) {
		return []string{d}, x.rmdir(d)
	}},
	{"rename", has(mounts.CapRename), 'f', func(x target, f, _ string) ([]string, error) {
		return []string{f, "new"}, x.rename(f, "new", 0)
	}},
	{"symlink", has(mounts.CapSymlink), 0, func(x target, _, _ string) ([]string, error) {
		return []string{"new"}, x.symlink("target", "new")
	}},
	{"mknod", has(mounts.CapMknod), 0, func(x target, _, _ string) ([]string, error) {
		return []string{"new"}, x.mknod("new", fs.ModeNamedPipe|0o644, 0)
	}},
	{"link", has(mounts.CapLink), 'f', func(x target, f, _ string) ([]string, error) {
		return []string{f, "new"}, x.link(f, "new")
	}},
	{"chmod", has(mounts.CapChmod), 'f', func(x target, f, _ string) ([]string, error) {
		return []string{f}, x.chmod(f, 0o600)
	}},
	{"chown", has(mounts.CapChown), 'f', func(x target, f, _ string) ([]string, error) {
		// To the owner it has: only the missing verb can make this fail.
		a, err := x.stat(f)
		if err != nil {
			return nil, err
		}
		return []string{f}, x.chown(f, int(a.Uid), int(a.Gid))
	}},
	{"chtimes", has(mounts.CapChtimes), 'f', func(x target, f, _ string) ([]string, error) {
		at := time.Unix(1_000_000_000, 0)
		return []string{f}, x.chtimes(f, at, at)
	}},
	{"setxattr", has(mounts.CapSetXattr), 'f', func(x target, f, _ string) ([]string, error) {
		return []string{f}, x.setXattr(f, "user.mountstest", []byte("v"), 0)
	}},
}

// fixtureKinds reports whether the absent-verb checks will find an existing
// regular file and a directory below the root to act on.
func fixtureKinds(t *testing.T, probe target, caps mounts.Capability) (file, dir bool) {
	t.Helper()
	if caps&mounts.CapMutating != 0 {
		return caps.Has(mounts.CapWrite), caps.Has(mounts.CapMkdir)
	}
	f, d := findFixture(t, probe)
	return f != "", d != ""
}

// pickFixture makes (on a writable mount) or finds an existing regular file
// and a directory other than the root; "" where there is none.
func pickFixture(t *testing.T, x target, caps mounts.Capability) (file, dir string) {
	t.Helper()
	if caps&mounts.CapMutating == 0 {
		return findFixture(t, x)
	}
	if caps.Has(mounts.CapWrite) {
		writeFile(t, x, "f", "data", 0o644)
		file = "f"
	}
	if caps.Has(mounts.CapMkdir) {
		require.NoError(t, x.mkdir("d", 0o755), "mkdir fixture")
		dir = "d"
	}
	return file, dir
}

// findFixture walks a read-only tree for the first regular file and the
// first directory below the root, in listing order.
func findFixture(t *testing.T, x target) (file, dir string) {
	t.Helper()
	var walk func(name string)
	walk = func(name string) {
		ents, err := x.readDir(name)
		require.NoErrorf(t, err, "ReadDir(%q)", name)
		for _, ent := range ents {
			child := mounts.Join(name, ent.Name)
			switch {
			case ent.Type.IsDir():
				if dir == "" {
					dir = child
				}
				walk(child)
			case ent.Type.IsRegular() && file == "":
				file = child
			}
		}
	}
	walk(".")
	return file, dir
}

func testAbsent(t *testing.T, e *env, ac absentCase) {
	x := e.x
	file, dir := pickFixture(t, x, e.caps)
	require.Falsef(t, ac.needs == 'f' && file == "" || ac.needs == 'd' && dir == "",
		"the fixture changed between mounts: no %c to call %s on", ac.needs, ac.name)
	want := mounts.ErrNotSupported
	if e.caps&mounts.CapMutating == 0 {
		want = mounts.ErrReadOnly
	}
	before := snapshot(t, x)
	names, err := ac.run(x, file, dir)
	wantErr(t, x, err, want, names...)
	assert.Equal(t, before, snapshot(t, x), "a missing verb changed the tree")
}

// testAbsentReadVerbs checks the helpers' answers for the optional
// non-mutating families, which do not depend on writability.
func testAbsentReadVerbs(t *testing.T, e *env) {
	x := e.x.(*libTarget)
	if !e.caps.Has(mounts.CapXattr) {
		_, err := x.getXattr(".", "user.a")
		wantErr(t, x, err, mounts.ErrNotSupported, ".")
		list, err := x.listXattr(".")
		assert.NoError(t, err, "ListXattr without xattrs is an empty list")
		assert.Empty(t, list, "ListXattr without xattrs")
		_, err = x.listXattr("no-such-name")
		wantErr(t, x, err, fs.ErrNotExist, "no-such-name")
	}
	if !e.caps.Has(mounts.CapStatFS) {
		_, err := x.statFS()
		wantErr(t, x, err, mounts.ErrNotSupported, ".")
	}
}
