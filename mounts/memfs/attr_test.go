package memfs_test

import (
	"context"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func TestChmod(t *testing.T) {
	tests := []struct {
		name, file string
		mode       fs.FileMode
		want       fs.FileMode
		wantErr    error
	}{
		{"file", "f", 0o600, 0o600, nil},
		{"special bits", "f", fs.ModeSetuid | fs.ModeSetgid | 0o755, fs.ModeSetuid | fs.ModeSetgid | 0o755, nil},
		{"sticky dir", "d", fs.ModeSticky | 0o777, fs.ModeDir | fs.ModeSticky | 0o777, nil},
		{"type bits ignored", "f", fs.ModeDir | 0o644, 0o644, nil},
		{"symlink", "l", 0o600, 0, mounts.ErrNotSupported},
		{"missing", "x", 0o600, 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, c := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			err := fsys.Chmod(context.Background(), tt.file, tt.mode)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				return
			}
			require.NoError(t, err)
			a := stat(t, fsys, tt.file)
			assert.Equal(t, tt.want, a.Mode)
			assert.Equal(t, c.last(), a.Ctime, "ctime stamped")
			assert.NotEqual(t, c.last(), a.Mtime, "mtime untouched")
		})
	}
}

func TestChown(t *testing.T) {
	tests := []struct {
		name, file       string
		uid, gid         int
		wantUid, wantGid uint32
		wantErr          error
	}{
		{"both", "f", 1, 2, 1, 2, nil},
		{"uid only", "f", 5, -1, 5, 1000, nil},
		{"gid only", "f", -1, 6, 1000, 6, nil},
		{"neither", "f", -1, -1, 1000, 1000, nil},
		{"symlink itself", "l", 3, 3, 3, 3, nil},
		{"dir", "d", 0, 0, 0, 0, nil},
		{"max id", "f", 1<<32 - 1, 1, 1<<32 - 1, 1, nil},
		{"out of range", "f", 1 << 32, 1, 0, 0, fs.ErrInvalid},
		{"negative", "f", -2, 1, 0, 0, fs.ErrInvalid},
		{"missing", "x", 1, 1, 0, 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, c := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			err := fsys.Chown(context.Background(), tt.file, tt.uid, tt.gid)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				return
			}
			require.NoError(t, err)
			a := stat(t, fsys, tt.file)
			assert.Equal(t, tt.wantUid, a.Uid)
			assert.Equal(t, tt.wantGid, a.Gid)
			assert.Equal(t, c.last(), a.Ctime)
			if tt.file == "l" {
				assert.Equal(t, uint32(1000), stat(t, fsys, "f").Uid, "target untouched")
			}
		})
	}
}

func TestChtimes(t *testing.T) {
	at := time.Date(2001, 2, 3, 4, 5, 6, 123456789, time.UTC)
	mt := time.Date(2002, 3, 4, 5, 6, 7, 987654321, time.UTC)
	tests := []struct {
		name, file string
		atime      time.Time
		mtime      time.Time
		setA, setM bool
		wantErr    error
	}{
		{"both", "f", at, mt, true, true, nil},
		{"atime only", "f", at, time.Time{}, true, false, nil},
		{"mtime only", "f", time.Time{}, mt, false, true, nil},
		{"neither", "f", time.Time{}, time.Time{}, false, false, nil},
		{"symlink itself", "l", at, mt, true, true, nil},
		{"dir", "d", at, mt, true, true, nil},
		{"missing", "x", at, mt, false, false, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, c := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			var before mounts.Attr
			if tt.wantErr == nil {
				before = stat(t, fsys, tt.file)
			}
			err := fsys.Chtimes(context.Background(), tt.file, tt.atime, tt.mtime)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				return
			}
			require.NoError(t, err)
			a := stat(t, fsys, tt.file)
			wantA, wantM := before.Atime, before.Mtime
			if tt.setA {
				wantA = at
			}
			if tt.setM {
				wantM = mt
			}
			assert.True(t, wantA.Equal(a.Atime), "atime %v, want %v", a.Atime, wantA)
			assert.True(t, wantM.Equal(a.Mtime), "mtime %v, want %v", a.Mtime, wantM)
			assert.Equal(t, c.last(), a.Ctime, "ctime is now")
		})
	}
}

func TestTimes(t *testing.T) {
	ctx := context.Background()
	fsys, c := newFS(t, memfs.Options{})
	build(t, fsys, "d/")
	w := openW(t, fsys, "d/f", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	created := c.last()
	a := stat(t, fsys, "d/f")
	assert.Equal(t, created, a.Atime)
	assert.Equal(t, created, a.Mtime)
	assert.Equal(t, created, a.Ctime)
	assert.Equal(t, created, stat(t, fsys, "d").Mtime, "dir mtime on add")

	_, err := w.WriteAt([]byte("x"), 0)
	require.NoError(t, err)
	wrote := c.last()
	a = stat(t, fsys, "d/f")
	assert.Equal(t, wrote, a.Mtime, "mtime on write")
	assert.Equal(t, wrote, a.Ctime, "ctime on write")
	assert.Equal(t, created, a.Atime)
	assert.Equal(t, created, stat(t, fsys, "d").Mtime, "writing a file leaves its dir alone")

	_, err = w.ReadAt(make([]byte, 1), 0)
	require.NoError(t, err)
	assert.Equal(t, created, stat(t, fsys, "d/f").Atime, "no atime on read (noatime)")

	require.NoError(t, fsys.SetXattr(ctx, "d/f", "user.k", []byte("v"), 0))
	a = stat(t, fsys, "d/f")
	assert.Equal(t, c.last(), a.Ctime, "ctime on xattr")
	assert.Equal(t, wrote, a.Mtime, "no mtime on xattr")

	require.NoError(t, fsys.Truncate(ctx, "d/f", 0))
	a = stat(t, fsys, "d/f")
	assert.Equal(t, c.last(), a.Mtime, "mtime on truncate")

	require.NoError(t, fsys.Unlink(ctx, "d/f"))
	d := stat(t, fsys, "d")
	assert.Equal(t, c.last(), d.Mtime, "dir mtime on remove")
	assert.Equal(t, c.last(), d.Ctime, "dir ctime on remove")
}

func TestOwners(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{Uid: 11, Gid: 12})
	build(t, fsys, "plain")
	a := stat(t, fsys, "plain")
	assert.Equal(t, [2]uint32{11, 12}, [2]uint32{a.Uid, a.Gid}, "no caller: options")

	cctx := mounts.WithCaller(ctx, mounts.Caller{Uid: 21, Gid: 22, Face: "kernel"})
	require.NoError(t, fsys.Mkdir(cctx, "d", 0o755))
	require.NoError(t, fsys.Symlink(cctx, "x", "l"))
	f, err := fsys.OpenFile(cctx, "f", os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	for _, name := range []string{"d", "l", "f"} {
		a := stat(t, fsys, name)
		assert.Equal(t, [2]uint32{21, 22}, [2]uint32{a.Uid, a.Gid}, "caller owns %s", name)
	}

	t.Run("setgid directory passes its group down", func(t *testing.T) {
		require.NoError(t, fsys.Chmod(ctx, "d", fs.ModeSetgid|0o775))
		require.NoError(t, fsys.Chown(ctx, "d", -1, 99))
		require.NoError(t, fsys.Mkdir(cctx, "d/sub", 0o755))
		build(t, fsys, "d/file")
		sub, file := stat(t, fsys, "d/sub"), stat(t, fsys, "d/file")
		assert.Equal(t, uint32(99), sub.Gid)
		assert.Equal(t, uint32(21), sub.Uid)
		assert.Equal(t, fs.ModeDir|fs.ModeSetgid|0o755, sub.Mode, "subdirectories inherit setgid")
		assert.Equal(t, uint32(99), file.Gid)
		assert.Equal(t, fs.FileMode(0o644), file.Mode, "files do not")
	})
}

func TestXattr(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 64<<10)
	tests := []struct {
		name, file, attr string
		value            []byte
		flags            int
		wantErr          error
	}{
		{"set", "f", "user.a", []byte("1"), 0, nil},
		{"set on dir", "d", "user.a", []byte("1"), 0, nil},
		{"empty value", "f", "user.a", []byte{}, 0, nil},
		{"64 KiB value", "f", "user.a", big, 0, nil},
		{"replace existing", "f", "user.old", []byte("2"), mounts.XattrReplace, nil},
		{"create new", "f", "user.a", []byte("1"), mounts.XattrCreate, nil},
		{"create existing", "f", "user.old", []byte("2"), mounts.XattrCreate, fs.ErrExist},
		{"replace missing", "f", "user.a", []byte("2"), mounts.XattrReplace, mounts.ErrNoAttr},
		{"value too big", "f", "user.a", append(big, 0), 0, syscall.E2BIG},
		{"trusted namespace", "f", "trusted.a", []byte("1"), 0, mounts.ErrNotSupported},
		{"security namespace", "f", "security.selinux", []byte("1"), 0, mounts.ErrNotSupported},
		{"no namespace", "f", "a", []byte("1"), 0, mounts.ErrNotSupported},
		{"bare prefix", "f", "user.", []byte("1"), 0, fs.ErrInvalid},
		{"name too long", "f", "user." + strings.Repeat("n", 251), []byte("1"), 0, mounts.ErrNameTooLong},
		{"unknown flag", "f", "user.a", []byte("1"), 4, fs.ErrInvalid},
		{"symlink", "l", "user.a", []byte("1"), 0, fs.ErrPermission},
		{"missing file", "x", "user.a", []byte("1"), 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			require.NoError(t, fsys.SetXattr(ctx, "f", "user.old", []byte("0"), 0))
			err := fsys.SetXattr(ctx, tt.file, tt.attr, tt.value, tt.flags)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				if tt.file == "f" {
					got, err := fsys.GetXattr(ctx, "f", "user.old")
					require.NoError(t, err)
					assert.Equal(t, "0", string(got), "unchanged")
				}
				return
			}
			require.NoError(t, err)
			got, err := fsys.GetXattr(ctx, tt.file, tt.attr)
			require.NoError(t, err)
			assert.Equal(t, tt.value, got)
		})
	}

	t.Run("list, get, remove", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{})
		build(t, fsys, "f", "l->f")
		names, err := fsys.ListXattr(ctx, "f")
		require.NoError(t, err)
		assert.Empty(t, names)
		for _, n := range []string{"user.b", "user.a", "user.c"} {
			require.NoError(t, fsys.SetXattr(ctx, "f", n, []byte(n), 0))
		}
		names, err = fsys.ListXattr(ctx, "f")
		require.NoError(t, err)
		assert.Equal(t, []string{"user.a", "user.b", "user.c"}, names, "sorted")

		got, err := fsys.GetXattr(ctx, "f", "user.b")
		require.NoError(t, err)
		got[0] = 'X'
		again, err := fsys.GetXattr(ctx, "f", "user.b")
		require.NoError(t, err)
		assert.Equal(t, "user.b", string(again), "Get returns a copy")

		require.NoError(t, fsys.RemoveXattr(ctx, "f", "user.b"))
		_, err = fsys.GetXattr(ctx, "f", "user.b")
		assertPathErr(t, err, "f", mounts.ErrNoAttr)
		assertPathErr(t, fsys.RemoveXattr(ctx, "f", "user.b"), "f", mounts.ErrNoAttr)
		assertPathErr(t, fsys.RemoveXattr(ctx, "f", "system.x"), "f", mounts.ErrNotSupported)
		_, err = fsys.GetXattr(ctx, "f", "security.selinux")
		assertPathErr(t, err, "f", mounts.ErrNotSupported)
		_, err = fsys.GetXattr(ctx, "l", "user.a")
		assertPathErr(t, err, "l", mounts.ErrNoAttr)
		assertPathErr(t, fsys.RemoveXattr(ctx, "l", "user.a"), "l", fs.ErrPermission)
		_, err = fsys.ListXattr(ctx, "x")
		assertPathErr(t, err, "x", fs.ErrNotExist)
	})
}

func TestStatFS(t *testing.T) {
	ctx := context.Background()
	t.Run("unlimited", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{})
		st, err := fsys.StatFS(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint32(4096), st.Bsize)
		assert.Equal(t, uint32(255), st.NameLen)
		assert.Equal(t, st.Blocks, st.Bfree, "empty")
		assert.GreaterOrEqual(t, st.Blocks*uint64(st.Bsize), uint64(1<<40), "a large capacity")
		assert.Equal(t, st.Files, st.Ffree)
		build(t, fsys, "d/", "d/f")
		require.NoError(t, mounts.WriteFile(ctx, fsys, "big", make([]byte, 1<<20), 0o644))
		st2, err := fsys.StatFS(ctx)
		require.NoError(t, err)
		assert.Equal(t, st.Ffree-3, st2.Ffree, "three entries")
		assert.Equal(t, st.Bfree-256-1, st2.Bfree, "1 MiB plus the small file's block")
	})
	t.Run("quota", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{MaxBytes: 1 << 20, MaxFiles: 10})
		build(t, fsys, "f")
		st, err := fsys.StatFS(ctx)
		require.NoError(t, err)
		assert.Equal(t, mounts.FSStat{
			Bsize: 4096, Blocks: 256, Bfree: 255, Bavail: 255, Files: 10, Ffree: 9, NameLen: 255,
		}, st)
	})
}

func TestQuota(t *testing.T) {
	ctx := context.Background()
	t.Run("bytes", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{MaxBytes: 100})
		w := openW(t, fsys, "f", os.O_RDWR|os.O_CREATE)
		defer w.Close()
		_, err := w.WriteAt(make([]byte, 90), 0)
		require.NoError(t, err)
		n, err := w.WriteAt(make([]byte, 20), 90)
		assertPathErr(t, err, "f", mounts.ErrNoSpace)
		assert.Zero(t, n)
		assert.Equal(t, int64(90), stat(t, fsys, "f").Size, "a refused write writes nothing")
		_, err = w.WriteAt(make([]byte, 20), 70)
		require.NoError(t, err, "overwriting allocated bytes costs nothing")
		require.NoError(t, w.Truncate(1<<30), "a hole costs nothing")
		// A page stores the prefix up to the last byte written: 51 bytes.
		_, err = w.WriteAt([]byte("x"), 1<<29+50)
		assertPathErr(t, err, "f", mounts.ErrNoSpace)
		require.NoError(t, w.Truncate(10))
		_, err = w.WriteAt(make([]byte, 90), 10)
		require.NoError(t, err, "truncate gave the bytes back")
		assertPathErr(t, fsys.SetXattr(ctx, "f", "user.k", []byte("v"), 0), "f", mounts.ErrNoSpace)
		assertPathErr(t, fsys.Symlink(ctx, "target", "l"), "l", mounts.ErrNoSpace)
		assert.False(t, exists(fsys, "l"), "refused symlink not created")
	})
	t.Run("unlink gives bytes back", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{MaxBytes: 100})
		require.NoError(t, mounts.WriteFile(ctx, fsys, "a", make([]byte, 100), 0o644))
		err := mounts.WriteFile(ctx, fsys, "b", []byte("x"), 0o644)
		assertPathErr(t, err, "b", mounts.ErrNoSpace)
		require.NoError(t, fsys.Unlink(ctx, "a"))
		require.NoError(t, fsys.Unlink(ctx, "b"), "b was created empty before the write failed")
		require.NoError(t, mounts.WriteFile(ctx, fsys, "c", make([]byte, 100), 0o644))
	})
	t.Run("files", func(t *testing.T) {
		fsys, _ := newFS(t, memfs.Options{MaxFiles: 3})
		build(t, fsys, "d/", "f", "l->f")
		assertPathErr(t, fsys.Mkdir(ctx, "d2", 0o755), "d2", mounts.ErrNoSpace)
		_, err := fsys.OpenFile(ctx, "g", os.O_WRONLY|os.O_CREATE, 0o644)
		assertPathErr(t, err, "g", mounts.ErrNoSpace)
		assertPathErr(t, fsys.Symlink(ctx, "f", "l2"), "l2", mounts.ErrNoSpace)
		require.NoError(t, fsys.Link(ctx, "f", "h"), "a hard link is no new file")
		require.NoError(t, fsys.Rmdir(ctx, "d"))
		require.NoError(t, fsys.Mkdir(ctx, "d2", 0o755))
		assert.False(t, exists(fsys, "g"))
	})
}

func TestSparseLargeFile(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	w := openW(t, fsys, "sparse", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	const off = 1 << 30
	start := time.Now()
	_, err := w.WriteAt([]byte{'x'}, off)
	require.NoError(t, err)
	require.NoError(t, w.Truncate(1<<40), "grow to 1 TiB")
	require.NoError(t, w.Truncate(off+1))
	elapsed := time.Since(start)

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, grew, int64(1<<20), "heap grew by %d bytes for a 1 GiB sparse file", grew)
	assert.Less(t, elapsed, time.Second, "sparse operations are O(pages touched)")

	a := stat(t, fsys, "sparse")
	assert.Equal(t, int64(off+1), a.Size)
	assert.Equal(t, int64(1), a.Blocks, "one 512-byte block allocated")

	buf := make([]byte, 4)
	n, err := w.ReadAt(buf, off-3)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 'x'}, buf[:n], "hole reads zeros")
	n, err = w.ReadAt(buf, 12345)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 0}, buf[:n])

	st, err := fsys.StatFS(ctx)
	require.NoError(t, err)
	assert.Equal(t, st.Blocks-1, st.Bfree, "statfs counts allocation, not size")
}
