package mounts_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// linkTree builds a mount with symlinks of every kind IOFS must resolve.
func linkTree(t *testing.T) mounts.FS {
	t.Helper()
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	files := map[string]string{"a.txt": "A", "dir/b.txt": "B", "dir/sub/c.txt": "C"}
	links := map[string]string{
		"rel":         "a.txt",
		"dir/up":      "../a.txt",
		"dirlink":     "dir",
		"dir/sublink": "sub",
		"dir/dotdot":  "..",
		"dot":         ".",
		"chain1":      "chain2",
		"chain2":      "dirlink/b.txt",
		"viadir":      "dirlink/sub/../b.txt", // lexical: dirlink/b.txt
		"abs":         "/a.txt",
		"escape":      "../outside",
		"dir/escape2": "../../outside",
		"dir/deep":    "sub/../../../x",
		"loop1":       "loop2",
		"loop2":       "loop1",
		"self":        "self",
		"dangling":    "nowhere",
		"filelink":    "a.txt",
	}
	require.NoError(t, mounts.MkdirAll(ctx, m, "dir/sub", 0o755))
	for name, data := range files {
		require.NoError(t, mounts.WriteFile(ctx, m, name, []byte(data), 0o644))
	}
	for name, target := range links {
		require.NoError(t, mounts.Symlink(ctx, m, target, name))
	}
	return m
}

func TestIOFSResolve(t *testing.T) {
	fsys := mounts.IOFS(context.Background(), linkTree(t))
	tests := []struct {
		name    string
		content string // when want is nil
		want    error
	}{
		{"a.txt", "A", nil},
		{"rel", "A", nil},
		{"dir/up", "A", nil},
		{"dirlink/b.txt", "B", nil},
		{"dirlink/sublink/c.txt", "C", nil},
		{"dir/dotdot/a.txt", "A", nil},
		{"dot/dot/a.txt", "A", nil},
		{"chain1", "B", nil},
		{"viadir", "B", nil},
		{"abs", "", mounts.ErrEscapes},
		{"escape", "", mounts.ErrEscapes},
		{"dir/escape2", "", mounts.ErrEscapes},
		{"dirlink/escape2", "", mounts.ErrEscapes},
		{"dir/deep", "", mounts.ErrEscapes},
		{"loop1", "", mounts.ErrLoop},
		{"self", "", mounts.ErrLoop},
		{"self/x", "", mounts.ErrLoop},
		{"dangling", "", fs.ErrNotExist},
		{"missing", "", fs.ErrNotExist},
		{"filelink/x", "", mounts.ErrNotDir},
		{"a.txt/x", "", mounts.ErrNotDir},
		{"/a.txt", "", fs.ErrInvalid},
		{"a\nb", "", fs.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fs.ReadFile(fsys, tc.name)
			_, serr := fs.Stat(fsys, tc.name)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.content, string(got))
				assert.NoError(t, serr)
				return
			}
			for op, err := range map[string]error{"open": err, "stat": serr} {
				assert.ErrorIsf(t, err, tc.want, "%s", op)
				var pe *fs.PathError
				if assert.Truef(t, errors.As(err, &pe), "%s: %T is not a *fs.PathError", op, err) {
					assert.Equalf(t, tc.name, pe.Path, "%s: the error names the name asked for", op)
				}
			}
		})
	}
}

func TestIOFSStatLstatReadLink(t *testing.T) {
	fsys := mounts.IOFS(context.Background(), linkTree(t))

	fi, err := fs.Stat(fsys, "dirlink")
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "Stat follows the link")
	assert.Equal(t, "dirlink", fi.Name(), "under the name asked for")

	fi, err = fs.Lstat(fsys, "dirlink")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "Lstat does not follow")
	_, err = fs.Lstat(fsys, "../x")
	assert.ErrorIs(t, err, fs.ErrInvalid)

	target, err := fs.ReadLink(fsys, "dir/up")
	require.NoError(t, err)
	assert.Equal(t, "../a.txt", target, "stored verbatim")
	_, err = fs.ReadLink(fsys, "a.txt")
	assert.ErrorIs(t, err, fs.ErrInvalid)

	ents, err := fs.ReadDir(fsys, "dirlink")
	require.NoError(t, err)
	assert.Equal(t, []string{"b.txt", "deep", "dotdot", "escape2", "sub", "sublink", "up"}, dirNames(ents))
	_, err = fs.ReadDir(fsys, "a.txt")
	assert.ErrorIs(t, err, mounts.ErrNotDir)
	root, err := fs.Stat(fsys, ".")
	require.NoError(t, err)
	assert.Equal(t, ".", root.Name())
}

func dirNames(ents []fs.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out
}

// TestIOFSTestFS runs fstest over a tree whose links all resolve inside.
func TestIOFSTestFS(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.MkdirAll(ctx, m, "dir/sub", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, m, "a.txt", []byte("A"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, m, "dir/sub/c.txt", []byte(strings.Repeat("c", 100_000)), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, m, "empty", nil, 0o644))
	require.NoError(t, mounts.Symlink(ctx, m, "../a.txt", "dir/up"))
	require.NoError(t, mounts.Symlink(ctx, m, "dir/sub", "sublink"))
	assert.NoError(t, fstest.TestFS(mounts.IOFS(ctx, m),
		"a.txt", "empty", "dir", "dir/sub", "dir/sub/c.txt", "dir/up", "sublink"))
}

func TestIOFSFile(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, m, "f", []byte("0123456789"), 0o644))
	f, err := mounts.IOFS(ctx, m).Open("f")
	require.NoError(t, err)
	defer f.Close()
	rs := f.(io.ReadSeeker)

	buf := make([]byte, 4)
	n, err := rs.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "0123", string(buf[:n]))
	off, err := rs.Seek(-3, io.SeekEnd)
	require.NoError(t, err)
	assert.Equal(t, int64(7), off)
	n, err = rs.Read(buf)
	assert.NoError(t, err, "a short read at the end is not yet EOF")
	assert.Equal(t, "789", string(buf[:n]))
	n, err = rs.Read(buf)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	off, err = rs.Seek(2, io.SeekStart)
	require.NoError(t, err)
	assert.Equal(t, int64(2), off)
	off, err = rs.Seek(1, io.SeekCurrent)
	require.NoError(t, err)
	assert.Equal(t, int64(3), off)
	_, err = rs.Seek(-1, io.SeekStart)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = rs.Seek(0, 42)
	assert.ErrorIs(t, err, fs.ErrInvalid)

	n, err = f.(io.ReaderAt).ReadAt(buf, 8)
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, io.EOF)
}

func TestIOFSDir(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	for _, name := range []string{"c", "a", "b"} {
		require.NoError(t, mounts.WriteFile(ctx, m, name, nil, 0o644))
	}
	d, err := mounts.IOFS(ctx, m).Open(".")
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Read(make([]byte, 1))
	assert.ErrorIs(t, err, mounts.ErrIsDir)

	rd := d.(fs.ReadDirFile)
	first, err := rd.ReadDir(2)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, dirNames(first))
	rest, err := rd.ReadDir(2)
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, dirNames(rest))
	none, err := rd.ReadDir(1)
	assert.Empty(t, none)
	assert.ErrorIs(t, err, io.EOF)
	none, err = rd.ReadDir(-1)
	assert.Empty(t, none)
	assert.NoError(t, err, "ReadDir(-1) at the end is empty, not EOF")
}
