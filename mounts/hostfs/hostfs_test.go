package hostfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/mounts"
)

func openRW(t *testing.T, dir string) *FS {
	t.Helper()
	fsys, err := Open(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.(*FS).Close() })
	return fsys.(*FS)
}

func TestOpenBadSource(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct {
		name, src, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "does not exist"},
		{"not a directory", file, "is not a directory"},
		{"relative missing", "./no/such/dir", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, err := Open(tt.src, Options{})
			require.Error(t, err)
			assert.Nil(t, fsys)
			assert.ErrorIs(t, err, ErrBadSource)
			assert.Contains(t, err.Error(), tt.src, "the error names the source as given")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCapabilities(t *testing.T) {
	dir := t.TempDir()
	rw, err := Open(dir, Options{})
	require.NoError(t, err)
	defer rw.(*FS).Close()
	ro, err := Open(dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer ro.(*ReadOnlyFS).Close()

	assert.Equal(t, mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS, mounts.Capabilities(rw))
	assert.Equal(t, mounts.CapXattr|mounts.CapStatFS, mounts.Capabilities(ro), "read-only has no write method at all")
	assert.False(t, mounts.Writable(ro))
	_, isRW := ro.(mounts.OpenFileFS)
	assert.False(t, isRW)

	want := mounts.Description{Type: "host", Source: "host", External: true, IgnoreFiles: true}
	assert.Equal(t, want, mounts.Describe(rw))
	assert.Equal(t, want, mounts.Describe(ro))

	ctx := context.Background()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644))
	err = mounts.WriteFile(ctx, ro, "f", []byte("x"), 0o644)
	assert.ErrorIs(t, err, mounts.ErrReadOnly)
	assert.ErrorIs(t, mounts.Mkdir(ctx, ro, "d", 0o755), mounts.ErrReadOnly)
	assert.ErrorIs(t, mounts.Unlink(ctx, ro, "f"), mounts.ErrReadOnly)
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	assert.Equal(t, "data", string(got), "nothing changed")

	f, err := ro.Open(ctx, "f")
	require.NoError(t, err)
	defer f.Close()
	_, isWritable := f.(mounts.WritableFile)
	assert.False(t, isWritable, "a file of a read-only mount has no WriteAt")
	_, isFD := f.(mounts.FDFile)
	assert.True(t, isFD, "files expose their descriptor for passthrough")
}

func TestErrorsNameMountPaths(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "f"), nil, 0o644))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "abs")))

	calls := []struct {
		name string
		err  func() error
		is   error
		path string
	}{
		{"stat missing", func() error { _, err := fsys.Stat(ctx, "d/nope"); return err }, fs.ErrNotExist, "d/nope"},
		{"open dir", func() error { _, err := fsys.Open(ctx, "d"); return err }, mounts.ErrIsDir, "d"},
		{"open symlink", func() error { _, err := fsys.Open(ctx, "abs"); return err }, mounts.ErrLoop, "abs"},
		{"escape", func() error { _, err := fsys.Stat(ctx, "abs/passwd"); return err }, mounts.ErrEscapes, "abs/passwd"},
		{"readdir file", func() error { _, err := fsys.ReadDir(ctx, "d/f"); return err }, mounts.ErrNotDir, "d/f"},
		{"readlink file", func() error { _, err := fsys.ReadLink(ctx, "d/f"); return err }, fs.ErrInvalid, "d/f"},
		{"rmdir non-empty", func() error { return fsys.Rmdir(ctx, "d") }, mounts.ErrNotEmpty, "d"},
		{"unlink dir", func() error { return fsys.Unlink(ctx, "d") }, mounts.ErrIsDir, "d"},
		{"rmdir file", func() error { return fsys.Rmdir(ctx, "d/f") }, mounts.ErrNotDir, "d/f"},
		{"mkdir exists", func() error { return fsys.Mkdir(ctx, "d", 0o755) }, fs.ErrExist, "d"},
		{"rmdir root", func() error { return fsys.Rmdir(ctx, ".") }, mounts.ErrBusy, "."},
		{"rename root", func() error { return fsys.Rename(ctx, ".", "x", 0) }, mounts.ErrBusy, "."},
		{"noreplace", func() error { return fsys.Rename(ctx, "d/f", "abs", mounts.RenameNoReplace) }, fs.ErrExist, "d/f"},
		{"xattr namespace", func() error { _, err := fsys.GetXattr(ctx, "d/f", "trusted.x"); return err }, mounts.ErrNotSupported, "d/f"},
		{"xattr missing", func() error { _, err := fsys.GetXattr(ctx, "d/f", "user.nope"); return err }, mounts.ErrNoAttr, "d/f"},
		{"bad name", func() error { _, err := fsys.Stat(ctx, "../x"); return err }, fs.ErrInvalid, "../x"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			require.Error(t, err)
			assert.ErrorIs(t, err, c.is)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.path, pe.Path)
			assert.NotContains(t, err.Error(), dir, "a host path leaked")
		})
	}
}

func TestCreateHonoursPermExactly(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("x"), 0o666))
	require.NoError(t, fsys.Mkdir(ctx, "d", 0o777|fs.ModeSticky))
	for name, want := range map[string]fs.FileMode{"f": 0o666, "d": fs.ModeDir | 0o777 | fs.ModeSticky} {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, want, a.Mode, "%s: the caller's perm, not the process umask", name)
	}
}

func TestCallerOwnsNewEntries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files to another user needs root")
	}
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Uid: 1234, Gid: 5678, Face: "kernel"})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", nil, 0o644))
	require.NoError(t, fsys.Mkdir(ctx, "d", 0o755))
	require.NoError(t, fsys.Symlink(ctx, "f", "l"))
	for _, name := range []string{"f", "d", "l"} {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, [2]uint32{1234, 5678}, [2]uint32{a.Uid, a.Gid}, name)
	}
	// A setgid directory passes its group down.
	require.NoError(t, fsys.Chmod(ctx, "d", 0o755|fs.ModeSetgid))
	require.NoError(t, fsys.Chown(ctx, "d", 1234, 42))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "d/g", nil, 0o644))
	a, err := fsys.Stat(ctx, "d/g")
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{1234, 42}, [2]uint32{a.Uid, a.Gid})
}

func TestRenameFlags(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("A"), 0o644))
	require.NoError(t, fsys.Mkdir(ctx, "b", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, fsys, "b/c", []byte("C"), 0o644))

	err := fsys.Rename(ctx, "a", "b/c", mounts.RenameNoReplace)
	assert.ErrorIs(t, err, fs.ErrExist)

	require.NoError(t, fsys.Rename(ctx, "a", "b/c", mounts.RenameExchange))
	for name, want := range map[string]string{"a": "C", "b/c": "A"} {
		got, err := mounts.ReadFile(ctx, fsys, name)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), name)
	}
	err = fsys.Rename(ctx, "a", "nope", mounts.RenameExchange)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, fsys.Rename(ctx, "a", "z", mounts.RenameNoReplace))
	_, err = fsys.Stat(ctx, "a")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	err = fsys.Rename(ctx, "b", "b/sub", 0)
	assert.ErrorIs(t, err, fs.ErrInvalid, "a directory cannot move below itself")
}

func TestLinkAndIno(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("A"), 0o644))
	require.NoError(t, fsys.Link(ctx, "a", "b"))
	a, err := fsys.Stat(ctx, "a")
	require.NoError(t, err)
	b, err := fsys.Stat(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, a.Ino, b.Ino)
	assert.EqualValues(t, 2, b.Nlink)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(dir, "a"), &st))
	assert.Equal(t, st.Ino, a.Ino, "the host inode on the root's device")
	assert.Less(t, a.Ino, uint64(1)<<56)

	require.NoError(t, fsys.Mkdir(ctx, "d", 0o755))
	err = fsys.Link(ctx, "d", "e")
	assert.ErrorIs(t, err, fs.ErrPermission, "no hard links to directories")
}

func TestInoFolding(t *testing.T) {
	f := &ReadOnlyFS{dev: 7}
	tests := []struct {
		name     string
		dev, ino uint64
		plain    bool
	}{
		{"root device small", 7, 12345, true},
		{"root device at limit", 7, 1<<48 - 1, true},
		{"root device huge", 7, 1 << 50, false},
		{"other device", 8, 12345, false},
		{"other device huge", 9, 1<<64 - 1, false},
	}
	seen := map[uint64]string{}
	for _, tt := range tests {
		got := f.ino(tt.dev, tt.ino)
		assert.Less(t, got, uint64(1)<<56, tt.name)
		if tt.plain {
			assert.Equal(t, tt.ino, got, tt.name)
		} else {
			assert.NotZero(t, got&(1<<55), "%s: folded numbers live above the plain range", tt.name)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s and %s share inode %d", prev, tt.name, got)
		}
		seen[got] = tt.name
	}
	assert.NotEqual(t, f.ino(8, 12345), f.ino(9, 12345), "the device is part of the number")
}

func TestChtimesNanosecondsOnSymlink(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", nil, 0o644))
	require.NoError(t, fsys.Symlink(ctx, "f", "l"))
	before, err := fsys.Stat(ctx, "f")
	require.NoError(t, err)
	at := time.Date(2001, 2, 3, 4, 5, 6, 123456789, time.UTC)
	mt := time.Date(2002, 3, 4, 5, 6, 7, 987654321, time.UTC)
	require.NoError(t, fsys.Chtimes(ctx, "l", at, mt))
	l, err := fsys.Stat(ctx, "l")
	require.NoError(t, err)
	assert.True(t, l.Atime.Equal(at), "atime %v", l.Atime)
	assert.True(t, l.Mtime.Equal(mt), "mtime %v", l.Mtime)
	after, err := fsys.Stat(ctx, "f")
	require.NoError(t, err)
	assert.True(t, before.Mtime.Equal(after.Mtime), "the target is untouched")

	// A zero time leaves that time alone.
	require.NoError(t, fsys.Chtimes(ctx, "l", time.Time{}, at))
	l, err = fsys.Stat(ctx, "l")
	require.NoError(t, err)
	assert.True(t, l.Atime.Equal(at))
	assert.True(t, l.Mtime.Equal(at))
}

func TestChmodChown(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", nil, 0o644))
	require.NoError(t, fsys.Symlink(ctx, "f", "l"))
	require.NoError(t, fsys.Chmod(ctx, "f", 0o750|fs.ModeSetuid))
	a, err := fsys.Stat(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, 0o750|fs.ModeSetuid, a.Mode)
	assert.ErrorIs(t, fsys.Chmod(ctx, "l", 0o777), mounts.ErrNotSupported, "Linux symlinks have no mode")

	if os.Geteuid() != 0 {
		assert.ErrorIs(t, fsys.Chown(ctx, "f", 4321, -1), fs.ErrPermission)
		return
	}
	require.NoError(t, fsys.Chown(ctx, "l", 11, 22))
	require.NoError(t, fsys.Chown(ctx, "f", 33, -1))
	l, err := fsys.Stat(ctx, "l")
	require.NoError(t, err)
	a, err = fsys.Stat(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{11, 22}, [2]uint32{l.Uid, l.Gid}, "lchown semantics")
	assert.Equal(t, [2]uint32{33, 0}, [2]uint32{a.Uid, a.Gid}, "-1 keeps the group")
}

func TestXattrs(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", nil, 0o644))
	require.NoError(t, fsys.SetXattr(ctx, "f", "user.one", []byte("1"), mounts.XattrCreate))
	assert.ErrorIs(t, fsys.SetXattr(ctx, "f", "user.one", []byte("x"), mounts.XattrCreate), fs.ErrExist)
	assert.ErrorIs(t, fsys.SetXattr(ctx, "f", "user.two", []byte("x"), mounts.XattrReplace), mounts.ErrNoAttr)
	require.NoError(t, fsys.SetXattr(ctx, "f", "user.two", []byte("22"), 0))
	assert.ErrorIs(t, fsys.SetXattr(ctx, "f", "security.x", []byte("x"), 0), mounts.ErrNotSupported)

	names, err := fsys.ListXattr(ctx, "f")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"user.one", "user.two"}, names)
	v, err := fsys.GetXattr(ctx, "f", "user.two")
	require.NoError(t, err)
	assert.Equal(t, "22", string(v))
	buf := make([]byte, 16)
	n, err := unix.Lgetxattr(filepath.Join(dir, "f"), "user.one", buf)
	require.NoError(t, err)
	assert.Equal(t, "1", string(buf[:n]), "stored on the host file")

	require.NoError(t, fsys.RemoveXattr(ctx, "f", "user.one"))
	_, err = fsys.GetXattr(ctx, "f", "user.one")
	assert.ErrorIs(t, err, mounts.ErrNoAttr)
	assert.ErrorIs(t, fsys.RemoveXattr(ctx, "f", "user.one"), mounts.ErrNoAttr)
}

func TestStatFS(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	got, err := fsys.StatFS(context.Background())
	require.NoError(t, err)
	var want unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &want))
	assert.EqualValues(t, want.Bsize, got.Bsize)
	assert.Equal(t, want.Blocks, got.Blocks)
	assert.Equal(t, want.Files, got.Files)
	assert.NotZero(t, got.NameLen)
}

func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := fsys.Open(ctx, "fifo")
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, mounts.ErrSpecial)
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
	a, err := fsys.Stat(ctx, "fifo")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeNamedPipe, a.Mode.Type())
}

func TestAppendAndTruncate(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("hello"), 0o644))
	f, err := fsys.OpenFile(ctx, "f", os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt([]byte(" world"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := mounts.ReadFile(ctx, fsys, "f")
	require.NoError(t, err)
	assert.Equal(t, "hello world", string(got))

	require.NoError(t, fsys.Truncate(ctx, "f", 4))
	got, err = mounts.ReadFile(ctx, fsys, "f")
	require.NoError(t, err)
	assert.Equal(t, "hell", string(got))
	assert.ErrorIs(t, fsys.Truncate(ctx, ".", 0), mounts.ErrIsDir)
}

// TestHostErrnoPassesThrough fills a tiny tmpfs mounted inside the source and
// checks ENOSPC arrives unchanged, with a short count, not silently.
func TestHostErrnoPassesThrough(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.Mkdir(small, 0o755))
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) })
	fsys := openRW(t, dir)
	ctx := context.Background()
	f, err := fsys.OpenFile(ctx, "small/big", os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	n, err := f.(mounts.WritableFile).WriteAt(make([]byte, 1<<20), 0)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.ErrorIs(t, err, mounts.ErrNoSpace)
	assert.Less(t, n, 1<<20)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "small/big", pe.Path)

	// The entry on the other device gets a folded inode number.
	a, err := fsys.Stat(ctx, "small/big")
	require.NoError(t, err)
	assert.NotZero(t, a.Ino&(1<<55))
	assert.EqualValues(t, n, a.Size, "the short count is what landed")
}

func TestContextCancelledReadDir(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fsys.ReadDir(ctx, ".")
	assert.True(t, errors.Is(err, context.Canceled))
	assert.False(t, strings.Contains(err.Error(), dir))
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	fsys, err := Open(dir, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	f, err := fsys.Open(ctx, "f")
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, fsys.(*FS).Close())
	require.NoError(t, fsys.(*FS).Close(), "idempotent")

	_, err = fsys.Stat(ctx, "f")
	assert.ErrorIs(t, err, fs.ErrClosed)
	_, err = fsys.Stat(ctx, "sub/f")
	assert.ErrorIs(t, err, fs.ErrClosed)
	assert.ErrorIs(t, fsys.(*FS).Rename(ctx, "f", "g", 0), fs.ErrClosed)
	_, err = fsys.(*FS).StatFS(ctx)
	assert.ErrorIs(t, err, fs.ErrClosed)
	buf := make([]byte, 1)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err, "files opened before Close stay usable")
	assert.Equal(t, "x", string(buf))
}

func TestSync(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	ctx := context.Background()
	require.NoError(t, mounts.WriteFile(ctx, fsys, "f", []byte("x"), 0o644))
	require.NoError(t, fsys.Symlink(ctx, "/etc", "link"))
	for _, name := range []string{".", "f", "link"} {
		assert.NoError(t, mounts.Sync(ctx, fsys, name), name)
	}
	err := mounts.Sync(ctx, fsys, "missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, mounts.Sync(ctx, fsys, "../x"), fs.ErrInvalid)
}

// TestMknodCallers: a device for a tool caller that is not root is EPERM
// whatever this process may do; a FIFO is anyone's, with the exact mode.
func TestMknodCallers(t *testing.T) {
	dir := t.TempDir()
	fsys := openRW(t, dir)
	user := mounts.WithCaller(context.Background(), mounts.Caller{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()) + 1, Face: "tool"})
	if os.Getuid() == 0 {
		user = mounts.WithCaller(context.Background(), mounts.Caller{Uid: 1001, Gid: 1002, Face: "tool"})
	}
	err := fsys.Mknod(user, "dev", fs.ModeDevice|fs.ModeCharDevice|0o666, mounts.MakeDev(1, 3))
	assert.ErrorIs(t, err, fs.ErrPermission)
	_, err = os.Lstat(filepath.Join(dir, "dev"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was made")

	require.NoError(t, fsys.Mknod(user, "fifo", fs.ModeNamedPipe|0o606, 0))
	fi, err := os.Lstat(filepath.Join(dir, "fifo"))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeNamedPipe|0o606, fi.Mode(), "the exact mode, whatever the umask")
	assert.ErrorIs(t, fsys.Mknod(user, "odd", fs.ModeIrregular|0o644, 0), fs.ErrInvalid)
	assert.ErrorIs(t, fsys.Mknod(user, "fifo", fs.ModeSocket|0o644, 0), fs.ErrExist)
}
