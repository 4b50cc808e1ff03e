package fusefs

import (
	"bytes"
	"context"
	"errors"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// mountFS mounts fsys on a fresh directory for the length of the test.
func mountFS(t *testing.T, fsys mounts.FS, opts Options) (*Server, string) {
	t.Helper()
	return mountSeamed(t, fsys, opts, seams{})
}

// mountSeamed is mountFS with the seams of a test.
func mountSeamed(t *testing.T, fsys mounts.FS, opts Options, sm seams) (*Server, string) {
	t.Helper()
	fusetest.Need(t)
	dir := t.TempDir()
	srv, err := mount(dir, fsys, opts, sm)
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			// Never leave a mount behind, even when a test left a
			// descriptor open.
			if st, _ := Probe(dir); st != StateNone {
				assert.NoError(t, ForceUnmount(dir))
			}
		}
	})
	return srv, dir
}

// mountMem mounts a fresh memory mount and returns it with the mount point.
func mountMem(t *testing.T) (*memfs.FS, string) {
	t.Helper()
	m := memfs.New(memfs.Options{})
	_, dir := mountFS(t, m, Options{})
	return m, dir
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer = testutil.Buffer

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st), "lstat %s", path)
	return &st
}

func TestFileReadWriteAppendTruncate(t *testing.T) {
	m, dir := mountMem(t)
	p := filepath.Join(dir, "f.txt")

	require.NoError(t, os.WriteFile(p, []byte("hello"), 0o640))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))

	// The write went to the mount, not just the kernel's cache.
	data, err := mounts.ReadFile(context.Background(), m, "f.txt")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))

	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte(", world"))
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "fsync")
	require.NoError(t, f.Close())
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "hello, world", string(got))

	// Random-access write past the end leaves a hole of zeros.
	f, err = os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("!"), 15)
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "hello, world\x00\x00\x00!", string(buf[:n]))
	// ftruncate goes through the handle.
	require.NoError(t, f.Truncate(5))
	require.NoError(t, f.Close())
	assert.Equal(t, int64(5), statT(t, p).Size)

	// truncate by name, growing.
	require.NoError(t, os.Truncate(p, 4096*3+1))
	st := statT(t, p)
	assert.Equal(t, int64(4096*3+1), st.Size)
	assert.Equal(t, int64(4096), st.Blksize)
	assert.Positive(t, st.Blocks)

	// O_TRUNC on open.
	f, err = os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, int64(0), statT(t, p).Size)

	// O_EXCL on an existing name.
	_, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	assert.ErrorIs(t, err, syscall.EEXIST)
}

func TestLargeWrite(t *testing.T) {
	_, dir := mountMem(t)
	p := filepath.Join(dir, "big")
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB: several 1 MiB WRITEs
	require.NoError(t, os.WriteFile(p, data, 0o600))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "content differs after a 3 MiB round trip")
}

func TestAttributes(t *testing.T) {
	m, dir := mountMem(t)
	ctx := context.Background()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o750))
	p := filepath.Join(dir, "d", "f")
	require.NoError(t, os.WriteFile(p, []byte("abc"), 0o600))

	a, err := m.Stat(ctx, "d/f")
	require.NoError(t, err)
	st := statT(t, p)
	assert.Equal(t, a.Ino, st.Ino, "the kernel shows the mount's inode number")
	assert.Equal(t, uint32(syscall.S_IFREG|0o600), st.Mode)
	assert.Equal(t, uint64(1), st.Nlink)
	assert.Equal(t, uint32(os.Geteuid()), st.Uid, "the caller owns what it creates")
	assert.Equal(t, a.Mtime.UnixNano(), st.Mtim.Nano(), "times keep their nanoseconds")

	// Stable: the same number on every stat.
	assert.Equal(t, st.Ino, statT(t, p).Ino)

	dst := statT(t, filepath.Join(dir, "d"))
	assert.Equal(t, uint32(syscall.S_IFDIR|0o750), dst.Mode)
	assert.GreaterOrEqual(t, dst.Nlink, uint64(2))
}

func TestSetattr(t *testing.T) {
	m, dir := mountMem(t)
	ctx := context.Background()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))

	t.Run("chmod", func(t *testing.T) {
		require.NoError(t, os.Chmod(p, os.ModeSetuid|0o751))
		assert.Equal(t, uint32(syscall.S_IFREG|syscall.S_ISUID|0o751), statT(t, p).Mode)
		a, err := m.Stat(ctx, "f")
		require.NoError(t, err)
		assert.Equal(t, os.ModeSetuid|0o751, a.Mode)
	})
	t.Run("chown", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another user needs root")
		}
		require.NoError(t, os.Chown(p, 1234, 5678))
		st := statT(t, p)
		assert.Equal(t, uint32(1234), st.Uid)
		assert.Equal(t, uint32(5678), st.Gid)
		// -1 leaves an id unchanged.
		require.NoError(t, os.Chown(p, -1, 42))
		st = statT(t, p)
		assert.Equal(t, uint32(1234), st.Uid)
		assert.Equal(t, uint32(42), st.Gid)
	})
	t.Run("utimens", func(t *testing.T) {
		at := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
		mt := time.Date(2021, 6, 7, 8, 9, 10, 11, time.UTC)
		require.NoError(t, os.Chtimes(p, at, mt))
		st := statT(t, p)
		assert.Equal(t, at.UnixNano(), st.Atim.Nano())
		assert.Equal(t, mt.UnixNano(), st.Mtim.Nano())

		// UTIME_NOW for mtime, UTIME_OMIT for atime.
		before := time.Now().Add(-time.Second)
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_NOW}}
		require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0))
		st = statT(t, p)
		assert.Equal(t, at.UnixNano(), st.Atim.Nano(), "UTIME_OMIT keeps atime")
		assert.True(t, time.Unix(st.Mtim.Unix()).After(before), "UTIME_NOW sets mtime to now, got %v", time.Unix(st.Mtim.Unix()))
	})
}

func TestDirectories(t *testing.T) {
	_, dir := mountMem(t)
	d := filepath.Join(dir, "d")
	require.NoError(t, os.Mkdir(d, 0o755))
	assert.ErrorIs(t, os.Mkdir(d, 0o755), syscall.EEXIST)
	for _, name := range []string{"c", "a", "b", "B", "_"} {
		require.NoError(t, os.WriteFile(filepath.Join(d, name), nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))

	names := func() []string {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	first := names()
	assert.Equal(t, []string{"B", "_", "a", "b", "c", "sub"}, first)
	for range 5 {
		assert.Equal(t, first, names(), "listings are deterministic")
	}
	// The raw listing carries "." and "..", as a local file system's does.
	ls, err := exec.Command("ls", "-a", d).Output()
	require.NoError(t, err)
	assert.Equal(t, ".\n..\nB\n_\na\nb\nc\nsub\n", string(ls))

	// fsync of a directory succeeds (git, SQLite and rsync rely on it).
	df, err := os.Open(d)
	require.NoError(t, err)
	assert.NoError(t, df.Sync(), "fsync of a directory")
	require.NoError(t, df.Close())

	assert.ErrorIs(t, syscall.Rmdir(d), syscall.ENOTEMPTY)
	assert.ErrorIs(t, syscall.Rmdir(filepath.Join(d, "a")), syscall.ENOTDIR)
	assert.ErrorIs(t, syscall.Unlink(filepath.Join(d, "sub")), syscall.EISDIR)
	require.NoError(t, syscall.Rmdir(filepath.Join(d, "sub")))
	for _, name := range []string{"a", "b", "c", "B", "_"} {
		require.NoError(t, syscall.Unlink(filepath.Join(d, name)))
	}
	assert.ErrorIs(t, syscall.Unlink(filepath.Join(d, "a")), syscall.ENOENT)
	require.NoError(t, syscall.Rmdir(d))
	_, err = os.Stat(d)
	assert.ErrorIs(t, err, syscall.ENOENT)
}

func TestRename(t *testing.T) {
	_, dir := mountMem(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	read := func(name string) string {
		b, err := os.ReadFile(p(name))
		require.NoError(t, err)
		return string(b)
	}
	require.NoError(t, os.WriteFile(p("a"), []byte("A"), 0o644))
	require.NoError(t, os.WriteFile(p("b"), []byte("B"), 0o644))
	require.NoError(t, os.Mkdir(p("d"), 0o755))

	t.Run("plain and across directories", func(t *testing.T) {
		require.NoError(t, os.Rename(p("a"), p("d/a2")))
		assert.Equal(t, "A", read("d/a2"))
		_, err := os.Stat(p("a"))
		assert.ErrorIs(t, err, syscall.ENOENT)
		require.NoError(t, os.Rename(p("d/a2"), p("a")))
	})
	t.Run("over an existing file", func(t *testing.T) {
		require.NoError(t, os.WriteFile(p("c"), []byte("C"), 0o644))
		require.NoError(t, os.Rename(p("c"), p("b")))
		assert.Equal(t, "C", read("b"))
		require.NoError(t, os.WriteFile(p("b"), []byte("B"), 0o644))
	})
	t.Run("noreplace", func(t *testing.T) {
		err := unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_NOREPLACE)
		assert.ErrorIs(t, err, syscall.EEXIST)
		assert.Equal(t, "A", read("a"))
		assert.Equal(t, "B", read("b"))
		require.NoError(t, unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("a3"), unix.RENAME_NOREPLACE))
		assert.Equal(t, "A", read("a3"))
		require.NoError(t, os.Rename(p("a3"), p("a")))
	})
	t.Run("exchange", func(t *testing.T) {
		inoA, inoB := statT(t, p("a")).Ino, statT(t, p("b")).Ino
		require.NoError(t, unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_EXCHANGE))
		assert.Equal(t, "B", read("a"))
		assert.Equal(t, "A", read("b"))
		assert.Equal(t, inoB, statT(t, p("a")).Ino, "the inodes swap with the names")
		assert.Equal(t, inoA, statT(t, p("b")).Ino)
		err := unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("missing"), unix.RENAME_EXCHANGE)
		assert.ErrorIs(t, err, syscall.ENOENT)
	})
	t.Run("over an open directory", func(t *testing.T) {
		require.NoError(t, os.Mkdir(p("old"), 0o700))
		want := statT(t, p("old"))
		fd, err := syscall.Open(p("old"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		require.NoError(t, err)
		defer syscall.Close(fd)
		require.NoError(t, os.Mkdir(p("new"), 0o755))
		require.NoError(t, syscall.Rename(p("new"), p("old")))
		var st syscall.Stat_t
		require.NoError(t, syscall.Fstat(fd, &st), "fstat of the replaced directory")
		assert.Equal(t, want.Ino, st.Ino)
		assert.Equal(t, want.Mode, st.Mode)
		assert.Equal(t, uint64(0), st.Nlink, "no name left")
		require.NoError(t, syscall.Rmdir(p("old")))
	})
	t.Run("directory over non-empty directory", func(t *testing.T) {
		require.NoError(t, os.Mkdir(p("e"), 0o755))
		require.NoError(t, os.WriteFile(p("d/x"), nil, 0o644))
		// syscall.Rename: os.Rename refuses any directory target itself.
		// POSIX allows EEXIST as well as ENOTEMPTY.
		err := syscall.Rename(p("e"), p("d"))
		assert.True(t, errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST), "got %v", err)
		require.NoError(t, syscall.Unlink(p("d/x")))
		require.NoError(t, syscall.Rename(p("e"), p("d")), "a directory replaces an empty one")
	})
}

func TestSymlinkAndLink(t *testing.T) {
	_, dir := mountMem(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	require.NoError(t, os.WriteFile(p("target"), []byte("T"), 0o644))

	require.NoError(t, os.Symlink("target", p("sym")))
	got, err := os.Readlink(p("sym"))
	require.NoError(t, err)
	assert.Equal(t, "target", got)
	st := statT(t, p("sym"))
	assert.Equal(t, uint32(syscall.S_IFLNK), st.Mode&syscall.S_IFMT)
	assert.Equal(t, int64(len("target")), st.Size)
	b, err := os.ReadFile(p("sym"))
	require.NoError(t, err)
	assert.Equal(t, "T", string(b), "the kernel follows the link")
	_, err = os.Readlink(p("target"))
	assert.ErrorIs(t, err, syscall.EINVAL)

	require.NoError(t, os.Link(p("target"), p("hard")))
	a, h := statT(t, p("target")), statT(t, p("hard"))
	assert.Equal(t, a.Ino, h.Ino, "hard links share the inode")
	assert.Equal(t, uint64(2), h.Nlink)
	require.NoError(t, os.WriteFile(p("hard"), []byte("via hard"), 0o644))
	b, err = os.ReadFile(p("target"))
	require.NoError(t, err)
	assert.Equal(t, "via hard", string(b))
	require.NoError(t, os.Remove(p("target")))
	assert.Equal(t, uint64(1), statT(t, p("hard")).Nlink)
}

func TestUnlinkOpenFile(t *testing.T) {
	m, dir := mountMem(t)
	p := filepath.Join(dir, "gone")
	require.NoError(t, os.WriteFile(p, []byte("still here"), 0o644))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.Remove(p))

	fi, err := f.Stat()
	require.NoError(t, err, "fstat after unlink")
	assert.Equal(t, int64(len("still here")), fi.Size())
	assert.Equal(t, uint64(0), fi.Sys().(*syscall.Stat_t).Nlink, "no name left")
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "still here", string(buf[:n]))
	require.NoError(t, f.Truncate(5), "ftruncate after unlink")
	fi, err = f.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(5), fi.Size())

	// The same through the library API, behind the kernel's back.
	q := filepath.Join(dir, "gone2")
	require.NoError(t, os.WriteFile(q, []byte("abc"), 0o644))
	g, err := os.Open(q)
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, mounts.Unlink(context.Background(), m, "gone2"))
	fi, err = g.Stat()
	require.NoError(t, err, "fstat after unlink through the library")
	assert.Equal(t, int64(3), fi.Size())

	// The name is free for a new file.
	require.NoError(t, os.WriteFile(p, []byte("new"), 0o644))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
}

func TestXattr(t *testing.T) {
	_, dir := mountMem(t)
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))

	require.NoError(t, unix.Setxattr(p, "user.one", []byte("1"), 0))
	require.NoError(t, unix.Setxattr(p, "user.two", []byte("22"), unix.XATTR_CREATE))
	assert.ErrorIs(t, unix.Setxattr(p, "user.two", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST)
	assert.ErrorIs(t, unix.Setxattr(p, "user.none", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA)

	sz, err := unix.Getxattr(p, "user.two", nil)
	require.NoError(t, err)
	assert.Equal(t, 2, sz, "size query")
	buf := make([]byte, 16)
	sz, err = unix.Getxattr(p, "user.two", buf)
	require.NoError(t, err)
	assert.Equal(t, "22", string(buf[:sz]))
	_, err = unix.Getxattr(p, "user.two", make([]byte, 1))
	assert.ErrorIs(t, err, syscall.ERANGE)
	_, err = unix.Getxattr(p, "user.missing", buf)
	assert.ErrorIs(t, err, syscall.ENODATA)

	buf = make([]byte, 64)
	sz, err = unix.Listxattr(p, buf)
	require.NoError(t, err)
	assert.Equal(t, "user.one\x00user.two\x00", string(buf[:sz]))

	require.NoError(t, unix.Removexattr(p, "user.one"))
	sz, err = unix.Listxattr(p, buf)
	require.NoError(t, err)
	assert.Equal(t, "user.two\x00", string(buf[:sz]))
}

func TestStatfs(t *testing.T) {
	m, dir := mountMem(t)
	want, err := mounts.StatFS(context.Background(), m)
	require.NoError(t, err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	assert.Equal(t, int64(255), st.Namelen)
	assert.Positive(t, st.Bsize)
	assert.Equal(t, want.Files, st.Files)
}

// roFS has only the read side: every write verb is absent (embedding the
// interface promotes its four methods and nothing else).
type roFS struct{ mounts.FS }

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("ro"), 0o666))

	t.Run("mount without write capabilities", func(t *testing.T) {
		_, dir := mountFS(t, roFS{m}, Options{})
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		require.NoError(t, err)
		assert.Equal(t, "ro", string(b))
		assert.ErrorIs(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644), syscall.EROFS)
		assert.ErrorIs(t, os.Mkdir(filepath.Join(dir, "d"), 0o755), syscall.EROFS)
		assert.ErrorIs(t, os.Remove(filepath.Join(dir, "f")), syscall.EROFS)
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(dir, &st), "statfs without StatFSer")
		assert.Equal(t, int64(255), st.Namelen)
	})
	t.Run("ReadOnly option", func(t *testing.T) {
		_, dir := mountFS(t, m, Options{ReadOnly: true})
		assert.ErrorIs(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644), syscall.EROFS)
		assert.ErrorIs(t, os.Mkdir(filepath.Join(dir, "d"), 0o755), syscall.EROFS)
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(dir, &st))
		assert.NotZero(t, st.Flags&unix.ST_RDONLY, "mounted MS_RDONLY")
	})
}

// panicFS panics where told to, to show a panic costs one request, not the
// mount.
type panicFS struct{ *memfs.FS }

func (p panicFS) Open(ctx context.Context, name string) (mounts.File, error) {
	if name == "boom" {
		panic("kaboom in Open")
	}
	return p.FS.Open(ctx, name)
}

func (p panicFS) ReadDir(ctx context.Context, name string) ([]mounts.DirEntry, error) {
	if name == "boomdir" {
		panic("kaboom in ReadDir")
	}
	return p.FS.ReadDir(ctx, name)
}

func TestPanicBecomesEIO(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, m, "boom", []byte("x"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, m, "fine", []byte("ok"), 0o644))
	require.NoError(t, m.Mkdir(ctx, "boomdir", 0o755))
	var logs syncBuffer
	_, dir := mountFS(t, panicFS{m}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	_, err := os.ReadFile(filepath.Join(dir, "boom"))
	assert.ErrorIs(t, err, syscall.EIO)
	_, err = os.ReadDir(filepath.Join(dir, "boomdir"))
	assert.ErrorIs(t, err, syscall.EIO)

	// The mount is alive.
	b, err := os.ReadFile(filepath.Join(dir, "fine"))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "after"), []byte("y"), 0o644))

	out := logs.String()
	assert.Contains(t, out, "kaboom in Open")
	assert.Contains(t, out, "kaboom in ReadDir")
	assert.Contains(t, out, "op=open")
}

// describedFS gives the memory mount another description, to select a
// caching policy.
type describedFS struct {
	*memfs.FS
	d mounts.Description
}

func (d describedFS) Describe() mounts.Description { return d.d }

func TestInvalidate(t *testing.T) {
	ctx := context.Background()

	t.Run("invalidation is what makes the change visible", func(t *testing.T) {
		// Immutable caching (1h timeouts, page cache kept) makes
		// staleness deterministic without Invalidate. The mount is
		// read-only so that the kernel does not refetch attributes after
		// a read to update atime; the changes come through the library.
		m := memfs.New(memfs.Options{})
		require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("one"), 0o644))
		srv, dir := mountFS(t, describedFS{m, mounts.Description{Type: "memory", Immutable: true}},
			Options{ReadOnly: true})
		p := filepath.Join(dir, "f")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, "one", string(b))
		require.Equal(t, int64(3), statT(t, p).Size)

		require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("three!"), 0o644))
		assert.Equal(t, int64(3), statT(t, p).Size, "cached attributes before Invalidate")
		b, err = os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "one", string(b), "cached content before Invalidate")

		srv.Invalidate("f")
		assert.Equal(t, int64(6), statT(t, p).Size)
		b, err = os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "three!", string(b))
	})

	t.Run("failed lookups are cached until invalidated", func(t *testing.T) {
		m := memfs.New(memfs.Options{})
		srv, dir := mountFS(t, m, Options{})
		_, err := os.Stat(filepath.Join(dir, "new"))
		require.ErrorIs(t, err, syscall.ENOENT)
		require.NoError(t, mounts.WriteFile(ctx, m, "new", []byte("n"), 0o644))
		_, err = os.Stat(filepath.Join(dir, "new"))
		require.ErrorIs(t, err, syscall.ENOENT, "the kernel answers the miss from its cache")
		srv.Invalidate("new")
		b, err := os.ReadFile(filepath.Join(dir, "new"))
		require.NoError(t, err)
		assert.Equal(t, "n", string(b))
	})

	t.Run("failed lookups of an external mount are not cached", func(t *testing.T) {
		m := memfs.New(memfs.Options{})
		_, dir := mountFS(t, describedFS{m, mounts.Description{Type: "host", External: true}}, Options{})
		_, err := os.Stat(filepath.Join(dir, "new"))
		require.ErrorIs(t, err, syscall.ENOENT)
		require.NoError(t, mounts.WriteFile(ctx, m, "new", []byte("n"), 0o644))
		b, err := os.ReadFile(filepath.Join(dir, "new"))
		require.NoError(t, err)
		assert.Equal(t, "n", string(b))
	})

	t.Run("memory mount", func(t *testing.T) {
		m := memfs.New(memfs.Options{})
		srv, dir := mountFS(t, m, Options{})
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
		p := filepath.Join(dir, "a", "b", "f")
		require.NoError(t, os.WriteFile(p, []byte("kernel"), 0o644))
		require.Equal(t, int64(6), statT(t, p).Size)

		require.NoError(t, mounts.WriteFile(ctx, m, "a/b/f", []byte("library API"), 0o644))
		require.NoError(t, mounts.Rename(ctx, m, "a/b", "a/c", 0))
		require.NoError(t, mounts.WriteFile(ctx, m, "a/c/g", []byte("g"), 0o644))
		srv.Invalidate("a/b/f", "a/b", "a/c", "a/c/g", "bad//name")

		b, err := os.ReadFile(filepath.Join(dir, "a", "c", "f"))
		require.NoError(t, err)
		assert.Equal(t, "library API", string(b))
		_, err = os.Stat(filepath.Join(dir, "a", "b"))
		assert.ErrorIs(t, err, syscall.ENOENT)
		ents, err := os.ReadDir(filepath.Join(dir, "a", "c"))
		require.NoError(t, err)
		require.Len(t, ents, 2)
		assert.Equal(t, "g", ents[1].Name())
	})
}

func TestProbeAndForceUnmountLive(t *testing.T) {
	fusetest.Need(t)
	plain := t.TempDir()
	st, err := Probe(plain)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st, "a plain directory")
	assert.ErrorIs(t, ForceUnmount(plain), ErrNotMounted)

	dir := t.TempDir()
	srv, err := Mount(dir, memfs.New(memfs.Options{}), Options{})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	t.Cleanup(func() {
		if st, _ := Probe(dir); st != StateNone {
			_ = ForceUnmount(dir)
		}
	})
	assert.Equal(t, dir, srv.Mountpoint())
	st, err = Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st)

	// The mount table and the stat are two looks: when what answers the
	// stat is not the mount the table listed (a stale mount detached in
	// between, and the plain directory below answering), the probe must
	// not take it for a live mount.
	m, found, err := mountAt(dir)
	require.NoError(t, err)
	require.True(t, found)
	st, moved, err := probeMounted(dir, m.dev)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st)
	assert.False(t, moved)
	_, moved, err = probeMounted(plain, m.dev)
	require.NoError(t, err)
	assert.True(t, moved, "a plain directory answering for the mount")

	require.NoError(t, ForceUnmount(dir))
	waited := make(chan struct{})
	go func() { srv.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the mount went away")
	}
	st, err = Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st)
}

func TestUnmountAndWait(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	srv, err := Mount(dir, memfs.New(memfs.Options{}), Options{FSName: "test-unmount"})
	if err != nil {
		fusetest.MountFailed(t, err)
	}
	fuse, found, err := mountedAt(dir)
	require.NoError(t, err)
	assert.True(t, found && fuse, "listed in mountinfo as FUSE")
	require.NoError(t, srv.Unmount())
	srv.Wait()
	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st)
}

const helperEnv = "VFSMOUNT_FUSEFS_HELPER_MOUNTPOINT"

// TestMain doubles as the helper process of TestProbeStale: with
// helperEnv set, the test binary mounts a memory mount there, says so, and
// serves until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if _, err := Mount(dir, memfs.New(memfs.Options{}), Options{}); err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("ready\n")
		select {}
	}
	os.Exit(m.Run())
}

func TestProbeStale(t *testing.T) {
	fusetest.Need(t)
	dir := t.TempDir()
	cmd := startHelper(t, dir)
	t.Cleanup(func() {
		if st, _ := Probe(dir); st != StateNone {
			_ = ForceUnmount(dir)
		}
	})

	st, err := Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateLive, st, "served by the helper")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	st, err = Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateStale, st, "the server died with the mount in place")
	_, err = os.ReadDir(dir)
	assert.ErrorIs(t, err, syscall.ENOTCONN)

	require.NoError(t, ForceUnmount(dir))
	st, err = Probe(dir)
	require.NoError(t, err)
	assert.Equal(t, StateNone, st)
	_, err = os.ReadDir(dir)
	require.NoError(t, err, "the directory is usable again")
}

// TestOpenOfNameRemovedBehindTheKernel: a name removed from the mount
// without telling the kernel (its entry still cached) is looked up again on
// open: O_CREAT creates it, a plain open fails with ENOENT, never ESTALE.
func TestOpenOfNameRemovedBehindTheKernel(t *testing.T) {
	m, dir := mountMem(t)
	ctx := context.Background()
	name := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(name, []byte("old"), 0o644))
	_, err := os.Stat(name) // the kernel caches the entry (30 s)
	require.NoError(t, err)

	require.NoError(t, m.Unlink(ctx, "f")) // behind the kernel's back
	_, err = os.ReadFile(name)
	assert.ErrorIs(t, err, syscall.ENOENT)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte("x"), 0o644))
	_, err = os.Stat(filepath.Join(dir, "g"))
	require.NoError(t, err)
	require.NoError(t, m.Unlink(ctx, "g"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte("new"), 0o644), "O_CREAT recreates the name")
	data, err := mounts.ReadFile(ctx, m, "g")
	require.NoError(t, err)
	assert.Equal(t, "new", string(data))
}
