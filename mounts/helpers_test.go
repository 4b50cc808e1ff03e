package mounts_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// The helpers are tested over the memory mount, cut down by the wrappers
// below to the capability sets under test. memfs is an external test
// dependency only: package mounts itself imports no mount.

// readOnly exposes only the read side of a mount: embedding the interface
// promotes its four methods and nothing else the value has.
type readOnly struct{ mounts.FS }

// mkdirOnly is writable in exactly one way.
type mkdirOnly struct {
	readOnly
	m mounts.MkdirFS
}

func (m mkdirOnly) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return m.m.Mkdir(ctx, name, perm)
}

// openFileOnly writes files but has no TruncateFS, so Truncate by name
// falls back to truncating a handle.
type openFileOnly struct {
	readOnly
	w mounts.OpenFileFS
}

func (o openFileOnly) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	return o.w.OpenFile(ctx, name, flag, perm)
}

// reporter declares every method, as the union does, and reports fewer.
type reporter struct {
	*memfs.FS
	caps mounts.Capability
}

func (r reporter) Capabilities() mounts.Capability { return r.caps }

// seeded returns a memory mount holding a file "f" ("data"), a directory
// "d" with a file "d/g", and a symlink "l" -> "f".
func seeded(t *testing.T) *memfs.FS {
	t.Helper()
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("data"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, m, "d", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, m, "d/g", []byte("g"), 0o644))
	require.NoError(t, mounts.Symlink(ctx, m, "f", "l"))
	return m
}

func TestCapabilities(t *testing.T) {
	m := memfs.New(memfs.Options{})
	tests := []struct {
		name     string
		fsys     mounts.FS
		want     mounts.Capability
		writable bool
	}{
		{"memfs", m, mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS | mounts.CapFreeze, true},
		{"read-only", readOnly{m}, 0, false},
		{"mkdir-only", mkdirOnly{readOnly{m}, m}, mounts.CapMkdir, true},
		{"openfile-only", openFileOnly{readOnly{m}, m}, mounts.CapWrite, true},
		{"reporter-none", reporter{m, 0}, 0, false},
		{"reporter-statfs", reporter{m, mounts.CapStatFS}, mounts.CapStatFS, false},
		{"reporter-link", reporter{m, mounts.CapLink}, mounts.CapLink, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mounts.Capabilities(tc.fsys), "got %v", mounts.Capabilities(tc.fsys))
			assert.Equal(t, tc.writable, mounts.Writable(tc.fsys))
		})
	}
}

func TestCapabilityString(t *testing.T) {
	tests := []struct {
		c    mounts.Capability
		want string
	}{
		{0, "read-only"},
		{mounts.CapWrite | mounts.CapMkdir, "write|mkdir"},
		{mounts.CapStatFS, "statfs"},
		{mounts.CapMutating, "write|truncate|mkdir|remove|rename|symlink|link|chmod|chown|chtimes|setxattr|mknod"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.c.String())
	}
	c := mounts.CapWrite | mounts.CapMkdir
	assert.True(t, c.Has(mounts.CapWrite))
	assert.True(t, c.Has(0))
	assert.False(t, c.Has(mounts.CapWrite|mounts.CapLink))
}

// TestMissingCapability: a verb the mount lacks is ErrReadOnly on a mount
// that can change nothing and ErrNotSupported on one that is writable in
// other ways (EROFS vs ENOTSUP through the kernel), as a *fs.PathError with
// the helper's op and the name, and nothing changes.
func TestMissingCapability(t *testing.T) {
	ctx := context.Background()
	at := time.Unix(1_000_000_000, 0)
	calls := []struct {
		op, path string
		skip     mounts.Capability // the mount under test has it
		run      func(fsys mounts.FS) error
	}{
		{"open", "new", mounts.CapWrite, func(fsys mounts.FS) error {
			_, err := mounts.OpenFile(ctx, fsys, "new", os.O_WRONLY|os.O_CREATE, 0o644)
			return err
		}},
		{"open", "f", mounts.CapWrite, func(fsys mounts.FS) error {
			_, err := mounts.OpenFile(ctx, fsys, "f", os.O_RDWR, 0)
			return err
		}},
		{"open", "new", mounts.CapWrite, func(fsys mounts.FS) error {
			return mounts.WriteFile(ctx, fsys, "new", []byte("x"), 0o644)
		}},
		{"truncate", "f", mounts.CapTruncate, func(fsys mounts.FS) error { return mounts.Truncate(ctx, fsys, "f", 0) }},
		{"mkdir", "new", mounts.CapMkdir, func(fsys mounts.FS) error { return mounts.Mkdir(ctx, fsys, "new", 0o755) }},
		{"mkdir", "new", mounts.CapMkdir, func(fsys mounts.FS) error { return mounts.MkdirAll(ctx, fsys, "new", 0o755) }},
		{"unlink", "f", mounts.CapRemove, func(fsys mounts.FS) error { return mounts.Unlink(ctx, fsys, "f") }},
		{"unlink", "f", mounts.CapRemove, func(fsys mounts.FS) error { return mounts.Remove(ctx, fsys, "f") }},
		{"rmdir", "d", mounts.CapRemove, func(fsys mounts.FS) error { return mounts.Rmdir(ctx, fsys, "d") }},
		{"unlink", "d/g", mounts.CapRemove, func(fsys mounts.FS) error { return mounts.RemoveAll(ctx, fsys, "d") }},
		{"rename", "f", mounts.CapRename, func(fsys mounts.FS) error { return mounts.Rename(ctx, fsys, "f", "new", 0) }},
		{"symlink", "new", mounts.CapSymlink, func(fsys mounts.FS) error { return mounts.Symlink(ctx, fsys, "f", "new") }},
		{"link", "new", mounts.CapLink, func(fsys mounts.FS) error { return mounts.Link(ctx, fsys, "f", "new") }},
		{"chmod", "f", mounts.CapChmod, func(fsys mounts.FS) error { return mounts.Chmod(ctx, fsys, "f", 0o600) }},
		{"chown", "f", mounts.CapChown, func(fsys mounts.FS) error { return mounts.Chown(ctx, fsys, "f", -1, -1) }},
		{"chtimes", "f", mounts.CapChtimes, func(fsys mounts.FS) error { return mounts.Chtimes(ctx, fsys, "f", at, at) }},
		{"setxattr", "f", mounts.CapSetXattr, func(fsys mounts.FS) error {
			return mounts.SetXattr(ctx, fsys, "f", "user.a", []byte("v"), 0)
		}},
		{"removexattr", "f", mounts.CapSetXattr, func(fsys mounts.FS) error {
			return mounts.RemoveXattr(ctx, fsys, "f", "user.a")
		}},
	}
	mountsUnderTest := []struct {
		name      string
		make      func(m *memfs.FS) mounts.FS
		want, not error
	}{
		{"read-only", func(m *memfs.FS) mounts.FS { return readOnly{m} }, mounts.ErrReadOnly, mounts.ErrNotSupported},
		{"mkdir-only", func(m *memfs.FS) mounts.FS { return mkdirOnly{readOnly{m}, m} }, mounts.ErrNotSupported, mounts.ErrReadOnly},
	}
	for _, mt := range mountsUnderTest {
		for _, c := range calls {
			m := seeded(t)
			fsys := mt.make(m)
			if mounts.Capabilities(fsys).Has(c.skip) {
				continue
			}
			t.Run(mt.name+"/"+c.op+"/"+c.path, func(t *testing.T) {
				err := c.run(fsys)
				require.Error(t, err)
				assert.ErrorIs(t, err, mt.want)
				assert.NotErrorIs(t, err, mt.not)
				var pe *fs.PathError
				if assert.True(t, errors.As(err, &pe), "%T is not a *fs.PathError", err) {
					assert.Equal(t, c.op, pe.Op)
					assert.Equal(t, c.path, pe.Path)
				}
				data, err := mounts.ReadFile(ctx, m, "f")
				assert.NoError(t, err)
				assert.Equal(t, "data", string(data), "content of f")
				_, err = m.Stat(ctx, "new")
				assert.ErrorIs(t, err, fs.ErrNotExist, "a missing verb created a name")
			})
		}
	}
}

// TestMissingReadVerbs: the optional non-mutating families answer the same
// on every mount without them.
func TestMissingReadVerbs(t *testing.T) {
	ctx := context.Background()
	for _, fsys := range []mounts.FS{readOnly{seeded(t)}, mkdirOnly{readOnly{seeded(t)}, memfs.New(memfs.Options{})}} {
		_, err := mounts.GetXattr(ctx, fsys, "f", "user.a")
		assert.ErrorIs(t, err, mounts.ErrNotSupported)
		assertPathErr(t, err, "getxattr", "f")

		list, err := mounts.ListXattr(ctx, fsys, "f")
		assert.NoError(t, err)
		assert.Empty(t, list, "an entry of a mount without xattrs has none")
		_, err = mounts.ListXattr(ctx, fsys, "missing")
		assert.ErrorIs(t, err, fs.ErrNotExist)

		_, err = mounts.StatFS(ctx, fsys)
		assert.ErrorIs(t, err, mounts.ErrNotSupported)
		assertPathErr(t, err, "statfs", ".")
	}
}

func assertPathErr(t *testing.T, err error, op, path string) {
	t.Helper()
	var pe *fs.PathError
	if assert.True(t, errors.As(err, &pe), "%v (%T) is not a *fs.PathError", err, err) {
		assert.Equal(t, op, pe.Op)
		assert.Equal(t, path, pe.Path)
	}
}

func TestWantsWrite(t *testing.T) {
	tests := []struct {
		name string
		flag int
		want bool
	}{
		{"rdonly", os.O_RDONLY, false},
		{"rdonly|excl", os.O_RDONLY | os.O_EXCL, false},
		{"rdonly|sync", os.O_RDONLY | os.O_SYNC, false},
		{"wronly", os.O_WRONLY, true},
		{"rdwr", os.O_RDWR, true},
		{"rdonly|create", os.O_RDONLY | os.O_CREATE, true},
		{"rdonly|trunc", os.O_RDONLY | os.O_TRUNC, true},
		{"rdonly|append", os.O_RDONLY | os.O_APPEND, true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, mounts.WantsWrite(tc.flag), tc.name)
	}
}

func TestOpenFileReadOnlyMount(t *testing.T) {
	ctx := context.Background()
	fsys := readOnly{seeded(t)}

	f, err := mounts.OpenFile(ctx, fsys, "f", os.O_RDONLY, 0)
	require.NoError(t, err, "read-only flags go to Open on any mount")
	buf := make([]byte, 4)
	_, err = f.ReadAt(buf, 0)
	assert.NoError(t, err)
	assert.Equal(t, "data", string(buf))
	require.NoError(t, f.Close())

	// The name is checked before the missing capability is reported.
	_, err = mounts.OpenFile(ctx, fsys, "../x", os.O_WRONLY|os.O_CREATE, 0o644)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	assertPathErr(t, err, "open", "../x")
}

// failing fails every read with EIO.
type failing struct{ readOnly }

func (f failing) Open(ctx context.Context, name string) (mounts.File, error) {
	file, err := f.readOnly.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return eioFile{file}, nil
}

type eioFile struct{ mounts.File }

func (eioFile) ReadAt([]byte, int64) (int, error) { return 0, syscall.EIO }

func TestReadFile(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	big := strings.Repeat("0123456789", 20_000) // several 64 KiB chunks, not a multiple
	require.NoError(t, mounts.WriteFile(ctx, m, "big", []byte(big), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, m, "empty", nil, 0o644))
	require.NoError(t, mounts.Mkdir(ctx, m, "d", 0o755))

	got, err := mounts.ReadFile(ctx, m, "big")
	require.NoError(t, err)
	assert.Equal(t, big, string(got))
	got, err = mounts.ReadFile(ctx, m, "empty")
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = mounts.ReadFile(ctx, m, "missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = mounts.ReadFile(ctx, m, "d")
	assert.ErrorIs(t, err, mounts.ErrIsDir)

	_, err = mounts.ReadFile(ctx, failing{readOnly{m}}, "big")
	assert.ErrorIs(t, err, syscall.EIO)
	assertPathErr(t, err, "read", "big")
}

func TestWriteFile(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("hello world"), 0o600))
	require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("hi"), 0o644), "rewrite truncates")
	got, err := mounts.ReadFile(ctx, m, "f")
	require.NoError(t, err)
	assert.Equal(t, "hi", string(got))
	a, err := m.Stat(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), a.Mode.Perm(), "perm applies on create only")
}

func TestTruncateFallsBackToHandle(t *testing.T) {
	ctx := context.Background()
	m := seeded(t)
	fsys := openFileOnly{readOnly{m}, m}
	require.Equal(t, mounts.CapWrite, mounts.Capabilities(fsys))

	require.NoError(t, mounts.Truncate(ctx, fsys, "f", 2))
	got, err := mounts.ReadFile(ctx, m, "f")
	require.NoError(t, err)
	assert.Equal(t, "da", string(got))
	require.NoError(t, mounts.Truncate(ctx, fsys, "f", 4))
	got, err = mounts.ReadFile(ctx, m, "f")
	require.NoError(t, err)
	assert.Equal(t, "da\x00\x00", string(got))

	assert.ErrorIs(t, mounts.Truncate(ctx, fsys, "missing", 0), fs.ErrNotExist)
	assert.ErrorIs(t, mounts.Truncate(ctx, fsys, "d", 0), mounts.ErrIsDir)
}

func TestMkdirAll(t *testing.T) {
	ctx := context.Background()
	m := seeded(t)
	require.NoError(t, mounts.MkdirAll(ctx, m, "a/b/c", 0o755))
	for _, name := range []string{"a", "a/b", "a/b/c"} {
		a, err := m.Stat(ctx, name)
		if assert.NoError(t, err, name) {
			assert.True(t, a.IsDir(), name)
		}
	}
	assert.NoError(t, mounts.MkdirAll(ctx, m, "a/b/c", 0o755), "existing directories are fine")
	assert.NoError(t, mounts.MkdirAll(ctx, m, ".", 0o755))
	assert.NoError(t, mounts.MkdirAll(ctx, m, "d", 0o755))

	err := mounts.MkdirAll(ctx, m, "f", 0o755)
	assert.ErrorIs(t, err, mounts.ErrNotDir)
	assertPathErr(t, err, "mkdir", "f")
	assert.ErrorIs(t, mounts.MkdirAll(ctx, m, "f/x/y", 0o755), mounts.ErrNotDir)

	err = mounts.MkdirAll(ctx, m, "x//y", 0o755)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = m.Stat(ctx, "x")
	assert.ErrorIs(t, err, fs.ErrNotExist, "an invalid name created a parent")
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	m := seeded(t)
	require.NoError(t, mounts.Remove(ctx, m, "l"), "remove a symlink")
	_, err := m.Stat(ctx, "f")
	assert.NoError(t, err, "removing a link keeps its target")
	assert.ErrorIs(t, mounts.Remove(ctx, m, "d"), mounts.ErrNotEmpty)
	require.NoError(t, mounts.Remove(ctx, m, "d/g"))
	require.NoError(t, mounts.Remove(ctx, m, "d"), "remove an empty directory")
	require.NoError(t, mounts.Remove(ctx, m, "f"))
	assert.ErrorIs(t, mounts.Remove(ctx, m, "f"), fs.ErrNotExist)
	ents, err := m.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Empty(t, ents)
}

func TestRemoveAll(t *testing.T) {
	ctx := context.Background()
	m := seeded(t)
	require.NoError(t, mounts.MkdirAll(ctx, m, "d/e/f", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, m, "d/e/f/x", []byte("x"), 0o644))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := mounts.RemoveAll(cancelled, m, "d")
	assert.ErrorIs(t, err, context.Canceled)
	assertPathErr(t, err, "remove", "d")
	_, err = m.Stat(ctx, "d/e/f/x")
	assert.NoError(t, err, "a cancelled RemoveAll removed entries")

	require.NoError(t, mounts.RemoveAll(ctx, m, "d"))
	_, err = m.Stat(ctx, "d")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, mounts.RemoveAll(ctx, m, "d"), fs.ErrNotExist, "a missing name is reported")
	require.NoError(t, mounts.RemoveAll(ctx, m, "f"), "a file")
	ents, err := m.ReadDir(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"l"}, names(ents))
}

func names(ents []mounts.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name
	}
	return out
}
