package memfs_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func TestDescribeAndCapabilities(t *testing.T) {
	fsys, _ := newFS(t, memfs.Options{})
	assert.Equal(t, mounts.Description{Type: "memory", Source: "memory"}, fsys.Describe())
	want := mounts.CapMutating | mounts.CapXattr | mounts.CapStatFS | mounts.CapFreeze
	assert.Equal(t, want, mounts.Capabilities(fsys), "capabilities")
}

func TestRoot(t *testing.T) {
	fsys, c := newFS(t, memfs.Options{Uid: 7, Gid: 8})
	a := stat(t, fsys, ".")
	assert.Equal(t, fs.ModeDir|0o755, a.Mode)
	assert.Equal(t, uint64(1), a.Ino, "root ino")
	assert.Equal(t, uint32(2), a.Nlink)
	assert.Equal(t, uint32(7), a.Uid)
	assert.Equal(t, uint32(8), a.Gid)
	assert.Equal(t, c.last(), a.Mtime)
	ents, err := fsys.ReadDir(context.Background(), ".")
	require.NoError(t, err)
	assert.Empty(t, ents)
}

func TestDefaultOwnerIsProcess(t *testing.T) {
	fsys := memfs.New(memfs.Options{})
	a := stat(t, fsys, ".")
	assert.Equal(t, uint32(os.Getuid()), a.Uid)
	assert.Equal(t, uint32(os.Getgid()), a.Gid)
}

func TestReadSide(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "d/", "d/b", "d/a", "d/c/", "d/l->a", "f")

	ents, err := fsys.ReadDir(ctx, "d")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
		assert.Equal(t, stat(t, fsys, mounts.Join("d", e.Name)).Ino, e.Ino, "ino of %s", e.Name)
	}
	assert.Equal(t, []string{"a", "b", "c", "l"}, names, "sorted")
	assert.Equal(t, fs.FileMode(0), ents[0].Type)
	assert.Equal(t, fs.ModeDir, ents[2].Type)
	assert.Equal(t, fs.ModeSymlink, ents[3].Type)

	target, err := fsys.ReadLink(ctx, "d/l")
	require.NoError(t, err)
	assert.Equal(t, "a", target)
	l := stat(t, fsys, "d/l")
	assert.Equal(t, fs.ModeSymlink|0o777, l.Mode, "lstat, not stat")
	assert.Equal(t, int64(1), l.Size, "symlink size is its target's length")

	tests := []struct {
		name string
		call func() error
		path string
		want error
	}{
		{"stat missing", func() error { _, err := fsys.Stat(ctx, "nope"); return err }, "nope", fs.ErrNotExist},
		{"stat below file", func() error { _, err := fsys.Stat(ctx, "f/x"); return err }, "f/x", mounts.ErrNotDir},
		{"stat below symlink", func() error { _, err := fsys.Stat(ctx, "d/l/x"); return err }, "d/l/x", mounts.ErrNotDir},
		{"readdir file", func() error { _, err := fsys.ReadDir(ctx, "f"); return err }, "f", mounts.ErrNotDir},
		{"readdir missing", func() error { _, err := fsys.ReadDir(ctx, "x"); return err }, "x", fs.ErrNotExist},
		{"readlink file", func() error { _, err := fsys.ReadLink(ctx, "f"); return err }, "f", fs.ErrInvalid},
		{"readlink missing", func() error { _, err := fsys.ReadLink(ctx, "x"); return err }, "x", fs.ErrNotExist},
		{"open dir", func() error { _, err := fsys.Open(ctx, "d"); return err }, "d", mounts.ErrIsDir},
		{"open root", func() error { _, err := fsys.Open(ctx, "."); return err }, ".", mounts.ErrIsDir},
		{"open symlink", func() error { _, err := fsys.Open(ctx, "d/l"); return err }, "d/l", mounts.ErrLoop},
		{"open missing", func() error { _, err := fsys.Open(ctx, "d/zz"); return err }, "d/zz", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertPathErr(t, tt.call(), tt.path, tt.want) })
	}
}

func TestOpenFile(t *testing.T) {
	const (
		rd, wr, rw         = os.O_RDONLY, os.O_WRONLY, os.O_RDWR
		creat, excl, trunc = os.O_CREATE, os.O_EXCL, os.O_TRUNC
	)
	tests := []struct {
		name     string
		file     string
		flag     int
		wantErr  error
		writable bool
		content  string // after open, for a successful one
	}{
		{"read existing", "f", rd, nil, false, "f"},
		{"write existing keeps content", "f", wr, nil, true, "f"},
		{"rdwr trunc", "f", rw | trunc, nil, true, ""},
		{"rdonly trunc truncates like Linux", "f", rd | trunc, nil, false, ""},
		{"create new", "new", wr | creat, nil, true, ""},
		{"create existing", "f", wr | creat, nil, true, "f"},
		{"create excl existing", "f", wr | creat | excl, fs.ErrExist, false, ""},
		{"create excl symlink", "l", wr | creat | excl, fs.ErrExist, false, ""},
		{"create excl new", "new", rw | creat | excl, nil, true, ""},
		{"create in dir", "d/new", wr | creat, nil, true, ""},
		{"create missing parent", "x/new", wr | creat, fs.ErrNotExist, false, ""},
		{"create below file", "f/new", wr | creat, mounts.ErrNotDir, false, ""},
		{"write missing", "new", wr, fs.ErrNotExist, false, ""},
		{"write dir", "d", wr, mounts.ErrIsDir, false, ""},
		{"create dir", "d", wr | creat, mounts.ErrIsDir, false, ""},
		{"write symlink", "l", wr, mounts.ErrLoop, false, ""},
		{"create on symlink", "l", wr | creat, mounts.ErrLoop, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			f, err := fsys.OpenFile(context.Background(), tt.file, tt.flag, 0o640)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				assert.Equal(t, "f", readFile(t, fsys, "f"), "nothing changed")
				return
			}
			require.NoError(t, err)
			defer f.Close()
			_, isW := f.(mounts.WritableFile)
			assert.Equal(t, tt.writable, isW, "implements WritableFile")
			assert.Equal(t, tt.content, readFile(t, fsys, tt.file))
			if tt.file == "new" || tt.file == "d/new" {
				assert.Equal(t, fs.FileMode(0o640), stat(t, fsys, tt.file).Mode, "perm of a new file")
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newFS(t, memfs.Options{})
	w := openW(t, fsys, "f", os.O_RDWR|os.O_CREATE)
	n, err := w.WriteAt([]byte("hello world"), 0)
	require.NoError(t, err)
	assert.Equal(t, 11, n)
	_, err = w.WriteAt([]byte("WORLD"), 6)
	require.NoError(t, err)
	_, err = w.WriteAt([]byte("!"), 13)
	require.NoError(t, err)
	assert.Equal(t, "hello WORLD\x00\x00!", readFile(t, fsys, "f"), "gap reads as zeros")

	buf := make([]byte, 5)
	n, err = w.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf[:n]))
	n, err = w.ReadAt(buf, 12)
	assert.ErrorIs(t, err, io.EOF, "short read at the end")
	assert.Equal(t, "\x00!", string(buf[:n]))
	n, err = w.ReadAt(buf, 100)
	assert.ErrorIs(t, err, io.EOF, "read past the end")
	assert.Zero(t, n)
	_, err = w.ReadAt(buf, -1)
	assertPathErr(t, err, "f", fs.ErrInvalid)
	_, err = w.WriteAt(buf, -1)
	assertPathErr(t, err, "f", fs.ErrInvalid)
	_, err = w.WriteAt([]byte("x"), 1<<63-1)
	assertPathErr(t, err, "f", syscall.EFBIG)
	assert.NoError(t, w.Sync())

	require.NoError(t, w.Truncate(5))
	a, err := w.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(5), a.Size)
	require.NoError(t, w.Close())

	t.Run("closed handle", func(t *testing.T) {
		_, err := w.ReadAt(buf, 0)
		assertPathErr(t, err, "f", fs.ErrClosed)
		_, err = w.WriteAt(buf, 0)
		assertPathErr(t, err, "f", fs.ErrClosed)
		assertPathErr(t, w.Truncate(0), "f", fs.ErrClosed)
		assertPathErr(t, w.Sync(), "f", fs.ErrClosed)
		_, err = w.Stat()
		assertPathErr(t, err, "f", fs.ErrClosed)
		assertPathErr(t, w.Close(), "f", fs.ErrClosed)
	})
	t.Run("write-only handle cannot read", func(t *testing.T) {
		wo := openW(t, fsys, "f", os.O_WRONLY)
		defer wo.Close()
		_, err := wo.ReadAt(buf, 0)
		assertPathErr(t, err, "f", syscall.EBADF)
	})
	t.Run("read-only handle", func(t *testing.T) {
		r, err := fsys.Open(ctx, "f")
		require.NoError(t, err)
		defer r.Close()
		_, ok := r.(io.WriterAt)
		assert.False(t, ok, "a read-only handle has no WriteAt")
	})
}

func TestAppend(t *testing.T) {
	fsys, _ := newFS(t, memfs.Options{})
	build(t, fsys, "f")
	a := openW(t, fsys, "f", os.O_WRONLY|os.O_APPEND)
	defer a.Close()
	other := openW(t, fsys, "f", os.O_WRONLY)
	defer other.Close()
	_, err := a.WriteAt([]byte("1"), 0)
	require.NoError(t, err)
	_, err = other.WriteAt([]byte("xyz"), 1)
	require.NoError(t, err)
	_, err = a.WriteAt([]byte("2"), 0)
	require.NoError(t, err)
	assert.Equal(t, "fxyz2", readFile(t, fsys, "f"), "O_APPEND writes at the current end, ignoring the offset")
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		size    int64
		wantErr error
		want    string
	}{
		{"shrink", "f", 1, nil, "f"[:1]},
		{"to zero", "f", 0, nil, ""},
		{"grow adds zeros", "f", 4, nil, "f\x00\x00\x00"},
		{"negative", "f", -1, fs.ErrInvalid, ""},
		{"dir", "d", 0, mounts.ErrIsDir, ""},
		{"symlink", "l", 0, mounts.ErrLoop, ""},
		{"missing", "x", 0, fs.ErrNotExist, ""},
		{"root", ".", 0, mounts.ErrIsDir, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _ := newFS(t, memfs.Options{})
			build(t, fsys, "f", "d/", "l->f")
			err := fsys.Truncate(context.Background(), tt.file, tt.size)
			if tt.wantErr != nil {
				assertPathErr(t, err, tt.file, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, readFile(t, fsys, tt.file))
		})
	}
}

func TestTruncateThenGrowReadsZeros(t *testing.T) {
	// A shrink must forget the old bytes even where the page's backing
	// array still holds them.
	fsys, _ := newFS(t, memfs.Options{})
	w := openW(t, fsys, "f", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	_, err := w.WriteAt([]byte("abcdefgh"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Truncate(2))
	_, err = w.WriteAt([]byte("Z"), 6)
	require.NoError(t, err)
	assert.Equal(t, "ab\x00\x00\x00\x00Z", readFile(t, fsys, "f"))
	require.NoError(t, w.Truncate(1))
	require.NoError(t, w.Truncate(8))
	assert.Equal(t, "a\x00\x00\x00\x00\x00\x00\x00", readFile(t, fsys, "f"))
}

func TestPagesAcrossBoundaries(t *testing.T) {
	// Writes and reads that straddle 64 KiB pages, and a shrink to inside
	// a page and to a page boundary.
	const page = 64 << 10
	fsys, _ := newFS(t, memfs.Options{})
	w := openW(t, fsys, "f", os.O_RDWR|os.O_CREATE)
	defer w.Close()
	want := make([]byte, 3*page+100)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	// Write in odd-sized pieces so chunks cross page edges.
	for off := 0; off < len(want); off += 10007 {
		end := min(off+10007, len(want))
		_, err := w.WriteAt(want[off:end], int64(off))
		require.NoError(t, err)
	}
	assert.Equal(t, string(want), readFile(t, fsys, "f"))
	got := make([]byte, 200)
	_, err := w.ReadAt(got, page-100)
	require.NoError(t, err)
	assert.Equal(t, want[page-100:page+100], got, "read across a page edge")

	for _, size := range []int64{2 * page, page + 5, 0} {
		require.NoError(t, w.Truncate(size))
		require.NoError(t, w.Truncate(3*page))
		expect := make([]byte, 3*page)
		copy(expect, want[:size])
		assert.Equal(t, string(expect), readFile(t, fsys, "f"), "after cut to %d and regrow", size)
		_, err := w.WriteAt(want[:len(expect)], 0)
		require.NoError(t, err)
	}
}
