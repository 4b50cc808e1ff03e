package hostfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

// escapeFixture is a parent directory holding the mount's source "root" and a
// sibling "outside" with a secret in it, plus links from the root that point
// out in every way a link can.
type escapeFixture struct {
	parent, root, outside string
}

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	parent := t.TempDir()
	x := escapeFixture{parent: parent, root: filepath.Join(parent, "root"), outside: filepath.Join(parent, "outside")}
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(os.MkdirAll(filepath.Join(x.outside, "odir"), 0o755))
	must(os.WriteFile(filepath.Join(x.outside, "secret"), []byte("secret"), 0o600))
	must(os.MkdirAll(filepath.Join(x.root, "sub", "deeper"), 0o755))
	must(os.WriteFile(filepath.Join(x.root, "file"), []byte("inside"), 0o644))
	links := map[string]string{
		"abs":          x.outside,                            // absolute, to a directory outside
		"absfile":      filepath.Join(x.outside, "secret"),   // absolute, to a file outside
		"dangling":     filepath.Join(x.outside, "new-file"), // absolute, to a name outside that does not exist
		"rel":          "../outside",                         // relative, climbing out
		"relfile":      "../outside/secret",                  // relative, to a file outside
		"sub/up":       "../../outside",                      // relative from a subdirectory
		"sub/deeper/r": "../../../outside",                   // deeper still
		"dotdot":       "..",                                 // the parent itself
		"loop":         "loop",                               // a loop
		"inside":       "sub",                                // a harmless link, for contrast
		"procroot":     "/proc/self/root" + x.outside,        // a magic link chain
		"sub/selfup":   "../sub/../../outside/secret",        // climbing after a detour
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(x.root, filepath.FromSlash(name))))
	}
	return x
}

// snapshot records everything under the parent except the root: names,
// types, modes, owners, sizes, contents, link targets, link counts, m/ctimes and
// user xattrs. Any escape that reads nothing but writes anything changes it.
func (x escapeFixture) snapshot(t *testing.T) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(x.parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == x.root {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		// Not atime: this very walk reads the files (relatime).
		line := fmt.Sprintf("%s mode=%o uid=%d gid=%d size=%d nlink=%d mtime=%d.%d ctime=%d.%d",
			strings.TrimPrefix(p, x.parent), st.Mode, st.Uid, st.Gid, st.Size, st.Nlink,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " sha=" + hex.EncodeToString(sum[:8])
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			line += " xattrs=" + strings.ReplaceAll(string(buf[:n]), "\x00", ",")
		}
		lines = append(lines, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// escapeCase is one attempt. want lists acceptable errors (any one); an empty
// want means the call must succeed, and check then proves it stayed inside.
type escapeCase struct {
	name  string
	do    func(ctx context.Context, f *FS) error
	want  []error
	check func(t *testing.T, ctx context.Context, f *FS)
}

func escapeCases() []escapeCase {
	errs := func(e ...error) []error { return e }
	read := func(name string) func(ctx context.Context, f *FS) error {
		return func(ctx context.Context, f *FS) error {
			_, err := mounts.ReadFile(ctx, f, name)
			return err
		}
	}
	isLink := func(name string) func(t *testing.T, ctx context.Context, f *FS) {
		return func(t *testing.T, ctx context.Context, f *FS) {
			a, err := f.Stat(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, fs.ModeSymlink, a.Mode.Type(), "%s is served as a symlink", name)
		}
	}
	return []escapeCase{
		{name: "dot-dot name", do: read("../outside/secret"), want: errs(fs.ErrInvalid)},
		{name: "dot-dot inside name", do: read("sub/../../outside/secret"), want: errs(fs.ErrInvalid)},
		{name: "absolute name", do: read("/etc/passwd"), want: errs(fs.ErrInvalid)},
		{name: "read through absolute dir link", do: read("abs/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read absolute file link", do: read("absfile"), want: errs(mounts.ErrLoop)},
		{name: "read relative file link", do: read("relfile"), want: errs(mounts.ErrLoop)},
		{name: "read through relative dir link", do: read("rel/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read through link in subdir", do: read("sub/up/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read through deep link", do: read("sub/deeper/r/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read through dotdot link", do: read("dotdot/outside/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read through magic link chain", do: read("procroot/secret"), want: errs(mounts.ErrEscapes)},
		{name: "read detour link", do: read("sub/selfup"), want: errs(mounts.ErrLoop)},
		{name: "loop", do: read("loop/x"), want: errs(mounts.ErrLoop)},
		{name: "stat through link", do: func(ctx context.Context, f *FS) error {
			_, err := f.Stat(ctx, "abs/secret")
			return err
		}, want: errs(mounts.ErrEscapes)},
		{name: "readdir absolute link", do: func(ctx context.Context, f *FS) error {
			_, err := f.ReadDir(ctx, "abs")
			return err
		}, want: errs(mounts.ErrNotDir)},
		{name: "readdir through link", do: func(ctx context.Context, f *FS) error {
			_, err := f.ReadDir(ctx, "rel/odir")
			return err
		}, want: errs(mounts.ErrEscapes)},
		{name: "truncate through file link", do: func(ctx context.Context, f *FS) error {
			return f.Truncate(ctx, "absfile", 0)
		}, want: errs(mounts.ErrLoop)},
		{name: "write through file link", do: func(ctx context.Context, f *FS) error {
			return mounts.WriteFile(ctx, f, "relfile", []byte("pwned"), 0o644)
		}, want: errs(mounts.ErrLoop)},
		{name: "create through dangling link", do: func(ctx context.Context, f *FS) error {
			return mounts.WriteFile(ctx, f, "dangling", []byte("pwned"), 0o644)
		}, want: errs(mounts.ErrLoop)},
		{name: "create exclusive through dangling link", do: func(ctx context.Context, f *FS) error {
			_, err := f.OpenFile(ctx, "dangling", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			return err
		}, want: errs(fs.ErrExist, mounts.ErrLoop)},
		{name: "create below dir link", do: func(ctx context.Context, f *FS) error {
			return mounts.WriteFile(ctx, f, "abs/new-file", []byte("pwned"), 0o644)
		}, want: errs(mounts.ErrEscapes)},
		{name: "mkdir below dir link", do: func(ctx context.Context, f *FS) error {
			return f.Mkdir(ctx, "rel/newdir", 0o755)
		}, want: errs(mounts.ErrEscapes)},
		{name: "unlink below dir link", do: func(ctx context.Context, f *FS) error {
			return f.Unlink(ctx, "abs/secret")
		}, want: errs(mounts.ErrEscapes)},
		{name: "rmdir below dir link", do: func(ctx context.Context, f *FS) error {
			return f.Rmdir(ctx, "rel/odir")
		}, want: errs(mounts.ErrEscapes)},
		{name: "unlink file link removes only the link", do: func(ctx context.Context, f *FS) error {
			return f.Unlink(ctx, "absfile")
		}, check: func(t *testing.T, ctx context.Context, f *FS) {
			_, err := f.Stat(ctx, "absfile")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{name: "rename out of the root", do: func(ctx context.Context, f *FS) error {
			return f.Rename(ctx, "file", "abs/stolen", 0)
		}, want: errs(mounts.ErrEscapes)},
		{name: "rename dir out via relative link", do: func(ctx context.Context, f *FS) error {
			return f.Rename(ctx, "sub", "sub/up/sub", 0)
		}, want: errs(mounts.ErrEscapes)},
		{name: "rename from outside in", do: func(ctx context.Context, f *FS) error {
			return f.Rename(ctx, "abs/secret", "stolen", 0)
		}, want: errs(mounts.ErrEscapes)},
		{name: "exchange with a link swaps names only", do: func(ctx context.Context, f *FS) error {
			return f.Rename(ctx, "file", "absfile", mounts.RenameExchange)
		}, check: isLink("file")},
		{name: "rename over a link replaces the link", do: func(ctx context.Context, f *FS) error {
			return f.Rename(ctx, "file", "relfile", 0)
		}, check: func(t *testing.T, ctx context.Context, f *FS) {
			got, err := mounts.ReadFile(ctx, f, "relfile")
			require.NoError(t, err)
			assert.Equal(t, "inside", string(got))
		}},
		{name: "hard link to outside via dir link", do: func(ctx context.Context, f *FS) error {
			return f.Link(ctx, "abs/secret", "hard")
		}, want: errs(mounts.ErrEscapes)},
		{name: "hard link of a file link links the link", do: func(ctx context.Context, f *FS) error {
			return f.Link(ctx, "absfile", "hard")
		}, check: isLink("hard")},
		{name: "hard link into outside", do: func(ctx context.Context, f *FS) error {
			return f.Link(ctx, "file", "rel/hard")
		}, want: errs(mounts.ErrEscapes)},
		{name: "symlink is stored, not followed", do: func(ctx context.Context, f *FS) error {
			return f.Symlink(ctx, "/etc/shadow", "sub/newlink")
		}, check: func(t *testing.T, ctx context.Context, f *FS) {
			target, err := f.ReadLink(ctx, "sub/newlink")
			require.NoError(t, err)
			assert.Equal(t, "/etc/shadow", target)
			_, err = mounts.ReadFile(ctx, f, "sub/newlink")
			assert.ErrorIs(t, err, mounts.ErrLoop)
		}},
		{name: "symlink created through dir link", do: func(ctx context.Context, f *FS) error {
			return f.Symlink(ctx, "x", "abs/newlink")
		}, want: errs(mounts.ErrEscapes)},
		{name: "chmod file link", do: func(ctx context.Context, f *FS) error {
			return f.Chmod(ctx, "absfile", 0o777)
		}, want: errs(mounts.ErrNotSupported)},
		{name: "chmod through dir link", do: func(ctx context.Context, f *FS) error {
			return f.Chmod(ctx, "abs/secret", 0o777)
		}, want: errs(mounts.ErrEscapes)},
		{name: "chown file link changes the link", do: func(ctx context.Context, f *FS) error {
			return f.Chown(ctx, "absfile", os.Getuid(), os.Getgid())
		}, check: isLink("absfile")},
		{name: "chtimes file link touches the link", do: func(ctx context.Context, f *FS) error {
			t := time.Unix(1e9, 0)
			return f.Chtimes(ctx, "relfile", t, t)
		}, check: func(t *testing.T, ctx context.Context, f *FS) {
			a, err := f.Stat(ctx, "relfile")
			require.NoError(t, err)
			assert.Equal(t, int64(1e9), a.Mtime.Unix())
		}},
		{name: "chtimes through dir link", do: func(ctx context.Context, f *FS) error {
			return f.Chtimes(ctx, "abs/secret", time.Unix(1, 0), time.Unix(1, 0))
		}, want: errs(mounts.ErrEscapes)},
		{name: "setxattr file link", do: func(ctx context.Context, f *FS) error {
			return f.SetXattr(ctx, "absfile", "user.pwned", []byte("1"), 0)
		}, want: errs(fs.ErrPermission)},
		{name: "getxattr through dir link", do: func(ctx context.Context, f *FS) error {
			_, err := f.GetXattr(ctx, "abs/secret", "user.x")
			return err
		}, want: errs(mounts.ErrEscapes)},
		{name: "readlink reports, never follows", do: func(ctx context.Context, f *FS) error {
			_, err := f.ReadLink(ctx, "abs/secret")
			return err
		}, want: errs(mounts.ErrEscapes)},
	}
}

// resolvers are the two ways the mount resolves a parent directory: openat2
// where the kernel has it, os.Root where it does not. Both must confine.
var resolvers = []struct {
	name      string
	noOpenat2 bool
}{{"openat2", false}, {"os.Root", true}}

func TestEscapes(t *testing.T) {
	cases := escapeCases()
	require.GreaterOrEqual(t, len(cases), 20)
	for _, r := range resolvers {
		for _, c := range cases {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				testEscape(t, c, r.noOpenat2)
			})
		}
	}
}

func testEscape(t *testing.T, c escapeCase, noOpenat2 bool) {
	x := newEscapeFixture(t)
	before := x.snapshot(t)
	fsys := openRW(t, x.root)
	fsys.noOpenat2.Store(noOpenat2)
	ctx := context.Background()
	err := c.do(ctx, fsys)
	if len(c.want) == 0 {
		require.NoError(t, err, "a confined operation")
		c.check(t, ctx, fsys)
	} else {
		require.Error(t, err)
		matched := false
		for _, w := range c.want {
			matched = matched || errors.Is(err, w)
		}
		assert.True(t, matched, "got %v, want one of %v", err, c.want)
		var pe *fs.PathError
		assert.ErrorAs(t, err, &pe)
		assert.NotContains(t, err.Error(), x.parent, "host path in the error")
	}
	assert.Equal(t, before, x.snapshot(t), "something outside the root changed")
}

// TestEscapeRace swaps a directory of the root for a symlink to the outside,
// atomically and as fast as it can, while mutating through the directory's
// name. Every operation must land inside the root or fail; nothing outside
// may change.
func TestEscapeRace(t *testing.T) {
	for _, r := range resolvers {
		t.Run(r.name, func(t *testing.T) { testEscapeRace(t, r.noOpenat2) })
	}
}

func testEscapeRace(t *testing.T, noOpenat2 bool) {
	x := newEscapeFixture(t)
	before := x.snapshot(t)
	fsys := openRW(t, x.root)
	fsys.noOpenat2.Store(noOpenat2)
	ctx := context.Background()
	d := filepath.Join(x.root, "d")
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "secret"), []byte("inside"), 0o644))
	require.NoError(t, os.Symlink(x.outside, filepath.Join(x.root, "swap")))

	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, filepath.Join(x.root, "swap"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("flip: %v", err)
				return
			}
			flips.Add(1)
		}
	})
	ops := []func(i int) error{
		func(i int) error { return mounts.WriteFile(ctx, fsys, "d/secret", []byte("pwned"), 0o644) },
		func(i int) error { return mounts.WriteFile(ctx, fsys, fmt.Sprintf("d/new%d", i), nil, 0o644) },
		func(i int) error { return fsys.Truncate(ctx, "d/secret", 0) },
		func(i int) error { return fsys.Chmod(ctx, "d/secret", 0o777) },
		func(i int) error { return fsys.Chown(ctx, "d/secret", 1, 1) },
		func(i int) error { return fsys.Chtimes(ctx, "d/secret", time.Unix(5, 0), time.Unix(5, 0)) },
		func(i int) error { return fsys.SetXattr(ctx, "d/secret", "user.pwned", []byte("1"), 0) },
		func(i int) error { return fsys.Mkdir(ctx, fmt.Sprintf("d/dir%d", i), 0o755) },
		func(i int) error { return fsys.Unlink(ctx, "d/secret") },
		func(i int) error { return fsys.Rmdir(ctx, "d/odir") },
		func(i int) error { return fsys.Rename(ctx, "d/secret", "stolen", 0) },
		func(i int) error { return fsys.Rename(ctx, "file", "d/planted", 0) },
		func(i int) error { return fsys.Link(ctx, "d/secret", fmt.Sprintf("hard%d", i)) },
		func(i int) error { return fsys.Symlink(ctx, "x", fmt.Sprintf("d/l%d", i)) },
		func(i int) error { _, err := mounts.ReadFile(ctx, fsys, "d/secret"); return err },
	}
	deadline := time.Now().Add(2 * time.Second)
	var leaked []string
	n := 0
	for i := 0; time.Now().Before(deadline); i++ {
		for _, op := range ops {
			n++
			if err := op(i); err != nil && strings.Contains(err.Error(), x.parent) {
				leaked = append(leaked, err.Error())
			}
		}
		// Reading the secret back must only ever see inside content.
		if data, err := mounts.ReadFile(ctx, fsys, "stolen"); err == nil {
			assert.NotEqual(t, "secret", string(data), "read the outside secret")
		}
		if i%50 == 0 {
			require.NoError(t, os.WriteFile(filepath.Join(x.root, "file"), []byte("inside"), 0o644))
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations against %d flips", n, flips.Load())
	assert.Greater(t, flips.Load(), int64(100), "the race actually ran")
	assert.Empty(t, leaked, "host paths in errors")
	assert.Equal(t, before, x.snapshot(t), "something outside the root changed")
}

// TestSymlinksInsideAreFollowed checks the other side of confinement: a link
// in the middle of a name that stays below the root resolves, as POSIX
// says, under both resolvers.
func TestSymlinksInsideAreFollowed(t *testing.T) {
	for _, r := range resolvers {
		t.Run(r.name, func(t *testing.T) {
			x := newEscapeFixture(t)
			fsys := openRW(t, x.root)
			fsys.noOpenat2.Store(r.noOpenat2)
			ctx := context.Background()
			require.NoError(t, os.Symlink("../sub/deeper", filepath.Join(x.root, "sub", "detour")))
			a, err := fsys.Stat(ctx, "inside/deeper")
			require.NoError(t, err)
			assert.True(t, a.IsDir())
			require.NoError(t, mounts.WriteFile(ctx, fsys, "sub/detour/f", []byte("via link"), 0o644))
			got, err := os.ReadFile(filepath.Join(x.root, "sub", "deeper", "f"))
			require.NoError(t, err)
			assert.Equal(t, "via link", string(got))
		})
	}
}
