package workspace

import (
	"context"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestMirror: mirror makes one tree another through its verbs, whatever
// the two hold at each name, and a second mirror changes nothing.
func TestMirror(t *testing.T) {
	ctx := context.Background()
	src, dst := memfs.New(memfs.Options{}), memfs.New(memfs.Options{})
	when := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	must := func(err error) { t.Helper(); require.NoError(t, err) }

	// src: what dst is to become.
	must(mounts.WriteFile(ctx, src, "same", []byte("same"), 0o644))
	must(mounts.WriteFile(ctx, src, "file-was-dir", []byte("f"), 0o600))
	must(mounts.MkdirAll(ctx, src, "dir-was-file/sub", 0o755))
	must(mounts.WriteFile(ctx, src, "x", []byte("with xattrs"), 0o644))
	must(mounts.SetXattr(ctx, src, "x", "user.keep", []byte("new"), 0))
	must(mounts.SetXattr(ctx, src, "x", "user.add", []byte("a"), 0))
	must(mounts.WriteFile(ctx, src, "linked", []byte("in dst, linked elsewhere"), 0o644))
	must(mounts.WriteFile(ctx, src, "h1", []byte("hard"), 0o644))
	must(mounts.Link(ctx, src, "h1", "h2"))
	must(mounts.Symlink(ctx, src, "same", "sym"))
	must(mounts.Mknod(ctx, src, "fifo", fs.ModeNamedPipe|0o644, 0))
	must(mounts.Chtimes(ctx, src, "same", when, when))
	must(mounts.Chtimes(ctx, src, "x", when, when))

	// dst: something else at each name.
	must(mounts.WriteFile(ctx, dst, "same", []byte("same"), 0o644))
	must(mounts.Chtimes(ctx, dst, "same", when, when))
	must(mounts.MkdirAll(ctx, dst, "file-was-dir/in", 0o755))
	must(mounts.WriteFile(ctx, dst, "dir-was-file", []byte("d"), 0o644))
	must(mounts.WriteFile(ctx, dst, "x", []byte("with xattrs"), 0o644))
	must(mounts.SetXattr(ctx, dst, "x", "user.keep", []byte("old"), 0))
	must(mounts.SetXattr(ctx, dst, "x", "user.drop", []byte("d"), 0))
	must(mounts.WriteFile(ctx, dst, "linked", []byte("in dst, linked elsewhere"), 0o644))
	must(mounts.Link(ctx, dst, "linked", "other-name"))
	must(mounts.WriteFile(ctx, dst, "extra", []byte("not in src"), 0o644))
	must(mounts.Symlink(ctx, dst, "elsewhere", "sym"))

	changed, err := mirror(ctx, dst, src, func(string) bool { return false })
	require.NoError(t, err)
	assert.NotContains(t, changed, "same", "the quick check holds")
	assert.Subset(t, changed, []string{"file-was-dir", "dir-was-file", "x", "h1", "h2", "sym", "fifo", "extra", "other-name"})

	a, err := dst.Stat(ctx, "file-was-dir")
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), a.Mode)
	a, err = dst.Stat(ctx, "dir-was-file/sub")
	require.NoError(t, err)
	assert.True(t, a.IsDir())
	v, err := mounts.GetXattr(ctx, dst, "x", "user.keep")
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))
	_, err = mounts.GetXattr(ctx, dst, "x", "user.drop")
	assert.ErrorIs(t, err, syscall.ENODATA)
	a, err = dst.Stat(ctx, "x")
	require.NoError(t, err)
	assert.True(t, a.Mtime.Equal(when), "the time is src's after the xattrs changed: %v", a.Mtime)
	h1, _ := dst.Stat(ctx, "h1")
	h2, _ := dst.Stat(ctx, "h2")
	assert.Equal(t, h1.Ino, h2.Ino, "linked as in src")
	l, _ := dst.Stat(ctx, "linked")
	assert.Equal(t, uint32(1), l.Nlink, "a file linked in dst alone is made anew, not written through")
	_, err = dst.Stat(ctx, "other-name")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	target, err := dst.ReadLink(ctx, "sym")
	require.NoError(t, err)
	assert.Equal(t, "same", target)
	a, err = dst.Stat(ctx, "fifo")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeNamedPipe, a.Mode.Type())

	again, err := mirror(ctx, dst, src, func(string) bool { return false })
	require.NoError(t, err)
	assert.Empty(t, again, "a second mirror changes nothing")
}
