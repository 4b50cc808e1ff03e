package memfs_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// clock is a fake clock that moves one millisecond per reading, so every
// change gets a distinct time and tests can tell which call stamped what.
type clock struct{ ticks atomic.Int64 }

func (c *clock) Now() time.Time {
	return epoch.Add(time.Duration(c.ticks.Add(1)) * time.Millisecond)
}

// last returns the time of the latest reading.
func (c *clock) last() time.Time {
	return epoch.Add(time.Duration(c.ticks.Load()) * time.Millisecond)
}

func newFS(t testing.TB, opts memfs.Options) (*memfs.FS, *clock) {
	t.Helper()
	c := &clock{}
	if opts.Now == nil {
		opts.Now = c.Now
	}
	if opts.Uid == 0 {
		opts.Uid = 1000
	}
	if opts.Gid == 0 {
		opts.Gid = 1000
	}
	return memfs.New(opts), c
}

// build creates a tree from a compact spec: "d/" is a directory, "l->t" a
// symlink to t, anything else a file whose content is its own name.
func build(t testing.TB, fsys mounts.FS, specs ...string) {
	t.Helper()
	ctx := context.Background()
	for _, s := range specs {
		switch {
		case len(s) > 1 && s[len(s)-1] == '/':
			require.NoError(t, mounts.Mkdir(ctx, fsys, s[:len(s)-1], 0o755), "mkdir %s", s)
		case strings.Contains(s, "->"):
			name, target, _ := strings.Cut(s, "->")
			require.NoError(t, mounts.Symlink(ctx, fsys, target, name), "symlink %s", s)
		default:
			require.NoError(t, mounts.WriteFile(ctx, fsys, s, []byte(s), 0o644), "write %s", s)
		}
	}
}

// assertPathErr checks err is a *fs.PathError for path wrapping want.
func assertPathErr(t testing.TB, err error, path string, want error) {
	t.Helper()
	if !assert.Error(t, err) {
		return
	}
	var pe *fs.PathError
	if assert.True(t, errors.As(err, &pe), "got %T %v, want *fs.PathError", err, err) {
		assert.Equal(t, path, pe.Path, "error path of %v", err)
	}
	assert.ErrorIs(t, err, want)
}

func stat(t testing.TB, fsys mounts.FS, name string) mounts.Attr {
	t.Helper()
	a, err := fsys.Stat(context.Background(), name)
	require.NoError(t, err, "stat %s", name)
	return a
}

func readFile(t testing.TB, fsys mounts.FS, name string) string {
	t.Helper()
	b, err := mounts.ReadFile(context.Background(), fsys, name)
	require.NoError(t, err, "read %s", name)
	return string(b)
}

func exists(fsys mounts.FS, name string) bool {
	_, err := fsys.Stat(context.Background(), name)
	return err == nil
}

func openW(t testing.TB, fsys mounts.FS, name string, flag int) mounts.WritableFile {
	t.Helper()
	f, err := mounts.OpenFile(context.Background(), fsys, name, flag, 0o644)
	require.NoError(t, err, "open %s", name)
	wf, ok := f.(mounts.WritableFile)
	require.True(t, ok, "open %s for writing: %T is not a WritableFile", name, f)
	return wf
}
