package mounts_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

// stubFS accepts every call except on names that start with "fail", which
// fail with fs.ErrNotExist, and "." which is a directory. Observe only
// forwards, so nothing needs storing.
type stubFS struct{}

func stubErr(op, name string) error {
	if strings.HasPrefix(name, "fail") {
		return mounts.PathErr(op, name, fs.ErrNotExist)
	}
	return nil
}

func (stubFS) Stat(_ context.Context, name string) (mounts.Attr, error) {
	if name == "." {
		return mounts.Attr{Mode: fs.ModeDir | 0o755}, nil
	}
	return mounts.Attr{Mode: 0o644}, stubErr("stat", name)
}
func (stubFS) ReadDir(_ context.Context, name string) ([]mounts.DirEntry, error) {
	return nil, stubErr("readdir", name)
}
func (stubFS) Open(_ context.Context, name string) (mounts.File, error) {
	if err := stubErr("open", name); err != nil {
		return nil, err
	}
	return &stubFile{}, nil
}
func (stubFS) ReadLink(_ context.Context, name string) (string, error) {
	return "t", stubErr("readlink", name)
}
func (s stubFS) OpenFile(ctx context.Context, name string, _ int, _ fs.FileMode) (mounts.File, error) {
	return s.Open(ctx, name)
}
func (stubFS) Truncate(_ context.Context, name string, _ int64) error {
	return stubErr("truncate", name)
}
func (stubFS) Mkdir(_ context.Context, name string, _ fs.FileMode) error {
	return stubErr("mkdir", name)
}
func (stubFS) Unlink(_ context.Context, name string) error { return stubErr("unlink", name) }
func (stubFS) Rmdir(_ context.Context, name string) error  { return stubErr("rmdir", name) }
func (stubFS) Rename(_ context.Context, oldname, _ string, _ mounts.RenameFlags) error {
	return stubErr("rename", oldname)
}
func (stubFS) Symlink(_ context.Context, _, name string) error { return stubErr("symlink", name) }
func (stubFS) Mknod(_ context.Context, name string, _ fs.FileMode, _ uint32) error {
	return stubErr("mknod", name)
}
func (stubFS) Link(_ context.Context, oldname, _ string) error { return stubErr("link", oldname) }
func (stubFS) Chmod(_ context.Context, name string, _ fs.FileMode) error {
	return stubErr("chmod", name)
}
func (stubFS) Chown(_ context.Context, name string, _, _ int) error {
	return stubErr("chown", name)
}
func (stubFS) Chtimes(_ context.Context, name string, _, _ time.Time) error {
	return stubErr("chtimes", name)
}
func (stubFS) GetXattr(_ context.Context, name, _ string) ([]byte, error) {
	return []byte("v"), stubErr("getxattr", name)
}
func (stubFS) ListXattr(_ context.Context, name string) ([]string, error) {
	return []string{"user.a"}, stubErr("listxattr", name)
}
func (stubFS) SetXattr(_ context.Context, name, _ string, _ []byte, _ int) error {
	return stubErr("setxattr", name)
}
func (stubFS) RemoveXattr(_ context.Context, name, _ string) error {
	return stubErr("removexattr", name)
}
func (stubFS) StatFS(context.Context) (mounts.FSStat, error) {
	return mounts.FSStat{Bsize: 512}, nil
}
func (stubFS) Describe() mounts.Description {
	return mounts.Description{Type: "stub", Source: "stub", External: true}
}

type stubFile struct{ failWrites bool }

func (*stubFile) ReadAt([]byte, int64) (int, error) { return 0, nil }
func (*stubFile) Stat() (mounts.Attr, error)        { return mounts.Attr{}, nil }
func (*stubFile) Close() error                      { return nil }
func (f *stubFile) WriteAt(p []byte, _ int64) (int, error) {
	if f.failWrites {
		return 0, mounts.PathErr("write", "f", mounts.ErrNoSpace)
	}
	return len(p), nil
}
func (*stubFile) Truncate(int64) error { return nil }
func (*stubFile) Sync() error          { return nil }

// roView has the read side only, like a git mount: embedding the interface
// promotes its four methods and nothing else.
type roView struct{ mounts.FS }

type recorder struct {
	mu    sync.Mutex
	calls [][]string
}

func (r *recorder) fn(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, names)
}

func (r *recorder) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func TestObserveReportsMutations(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		op      func(fsys mounts.FS) error
		want    [][]string
		wantErr bool
	}{
		{"truncate", func(f mounts.FS) error { return mounts.Truncate(ctx, f, "a", 0) }, [][]string{{"a"}}, false},
		{"mkdir", func(f mounts.FS) error { return mounts.Mkdir(ctx, f, "d", 0o755) }, [][]string{{"d"}}, false},
		{"unlink", func(f mounts.FS) error { return mounts.Unlink(ctx, f, "a") }, [][]string{{"a"}}, false},
		{"rmdir", func(f mounts.FS) error { return mounts.Rmdir(ctx, f, "d") }, [][]string{{"d"}}, false},
		{"rename", func(f mounts.FS) error { return mounts.Rename(ctx, f, "a", "b", 0) }, [][]string{{"a", "b"}}, false},
		{"symlink", func(f mounts.FS) error { return mounts.Symlink(ctx, f, "t", "l") }, [][]string{{"l"}}, false},
		{"mknod", func(f mounts.FS) error { return mounts.Mknod(ctx, f, "p", fs.ModeNamedPipe|0o644, 0) }, [][]string{{"p"}}, false},
		{"link", func(f mounts.FS) error { return mounts.Link(ctx, f, "a", "b") }, [][]string{{"a", "b"}}, false},
		{"chmod", func(f mounts.FS) error { return mounts.Chmod(ctx, f, "a", 0o600) }, [][]string{{"a"}}, false},
		{"chown", func(f mounts.FS) error { return mounts.Chown(ctx, f, "a", 1, 1) }, [][]string{{"a"}}, false},
		{"chtimes", func(f mounts.FS) error { return mounts.Chtimes(ctx, f, "a", time.Now(), time.Now()) }, [][]string{{"a"}}, false},
		{"setxattr", func(f mounts.FS) error { return mounts.SetXattr(ctx, f, "a", "user.k", nil, 0) }, [][]string{{"a"}}, false},
		{"removexattr", func(f mounts.FS) error { return mounts.RemoveXattr(ctx, f, "a", "user.k") }, [][]string{{"a"}}, false},
		{"write file", func(f mounts.FS) error { return mounts.WriteFile(ctx, f, "w", []byte("x"), 0o644) },
			[][]string{{"w"}, {"w"}}, false}, // created at open, written at close
		// MkdirAll stats "fail1", which fails, then tries to create it,
		// which fails too: nothing is reported.
		{"failed mkdir all", func(f mounts.FS) error { return mounts.MkdirAll(ctx, f, "fail1/x", 0o755) }, nil, true},
		{"reads", func(f mounts.FS) error {
			if _, err := f.Stat(ctx, "a"); err != nil {
				return err
			}
			if _, err := f.ReadDir(ctx, "."); err != nil {
				return err
			}
			if _, err := f.ReadLink(ctx, "a"); err != nil {
				return err
			}
			if _, err := mounts.GetXattr(ctx, f, "a", "user.k"); err != nil {
				return err
			}
			if _, err := mounts.ListXattr(ctx, f, "a"); err != nil {
				return err
			}
			if _, err := mounts.StatFS(ctx, f); err != nil {
				return err
			}
			file, err := mounts.OpenFile(ctx, f, "a", os.O_RDONLY, 0)
			if err != nil {
				return err
			}
			return file.Close()
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			o := mounts.Observe(stubFS{}, r.fn)
			err := tt.op(o)
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, r.take())
		})
	}
}

func TestObserveIgnoresFailures(t *testing.T) {
	ctx := context.Background()
	var r recorder
	o := mounts.Observe(stubFS{}, r.fn)
	errs := []error{
		mounts.Truncate(ctx, o, "fail", 0),
		mounts.Mkdir(ctx, o, "fail", 0o755),
		mounts.Unlink(ctx, o, "fail"),
		mounts.Rmdir(ctx, o, "fail"),
		mounts.Rename(ctx, o, "fail", "b", 0),
		mounts.Symlink(ctx, o, "t", "fail"),
		mounts.Mknod(ctx, o, "fail", fs.ModeSocket|0o644, 0),
		mounts.Link(ctx, o, "fail", "b"),
		mounts.Chmod(ctx, o, "fail", 0),
		mounts.Chown(ctx, o, "fail", 0, 0),
		mounts.Chtimes(ctx, o, "fail", time.Time{}, time.Time{}),
		mounts.SetXattr(ctx, o, "fail", "user.k", nil, 0),
		mounts.RemoveXattr(ctx, o, "fail", "user.k"),
		mounts.WriteFile(ctx, o, "fail", nil, 0o644),
	}
	for i, err := range errs {
		assert.ErrorIs(t, err, fs.ErrNotExist, "call %d", i)
	}
	assert.Empty(t, r.take())
}

func TestObserveFileReportsOnceWritten(t *testing.T) {
	ctx := context.Background()
	var r recorder
	o := mounts.Observe(stubFS{}, r.fn)

	// Opened for writing without O_CREATE or O_TRUNC and never written:
	// nothing changed, nothing reported.
	f, err := mounts.OpenFile(ctx, o, "a", os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Empty(t, r.take())

	f, err = mounts.OpenFile(ctx, o, "a", os.O_RDWR, 0)
	require.NoError(t, err)
	w, ok := f.(mounts.WritableFile)
	require.True(t, ok)
	_, err = w.WriteAt([]byte("x"), 0)
	require.NoError(t, err)
	assert.Empty(t, r.take(), "not after every write")
	require.NoError(t, w.Sync())
	assert.Equal(t, [][]string{{"a"}}, r.take(), "sync reports a written file")
	require.NoError(t, w.Sync())
	assert.Empty(t, r.take(), "nothing written since the last report")
	require.NoError(t, w.Truncate(0))
	require.NoError(t, w.Close())
	assert.Equal(t, [][]string{{"a"}}, r.take(), "close reports a truncated file")

	// A write that fails changes nothing.
	failing := mounts.Observe(failingWrites{}, r.fn)
	f, err = mounts.OpenFile(ctx, failing, "a", os.O_WRONLY, 0)
	require.NoError(t, err)
	w = f.(mounts.WritableFile)
	_, err = w.WriteAt([]byte("x"), 0)
	assert.ErrorIs(t, err, mounts.ErrNoSpace)
	require.NoError(t, w.Close())
	assert.Empty(t, r.take())
}

type failingWrites struct{ stubFS }

func (failingWrites) OpenFile(context.Context, string, int, fs.FileMode) (mounts.File, error) {
	return &stubFile{failWrites: true}, nil
}

func TestObserveForwardsCapabilitiesAndDescriptions(t *testing.T) {
	ctx := context.Background()
	var r recorder
	full := mounts.Observe(stubFS{}, r.fn)
	assert.Equal(t, mounts.Capabilities(stubFS{}), mounts.Capabilities(full))
	assert.Equal(t, mounts.Description{Type: "stub", Source: "stub", External: true}, mounts.Describe(full))
	assert.Equal(t, mounts.Describe(stubFS{}), mounts.DescribeAt(full, "a"))

	ro := mounts.Observe(roView{stubFS{}}, r.fn)
	assert.Equal(t, mounts.Capability(0), mounts.Capabilities(ro))
	assert.False(t, mounts.Writable(ro))
	assert.ErrorIs(t, mounts.Mkdir(ctx, ro, "d", 0o755), mounts.ErrReadOnly)
	assert.ErrorIs(t, mounts.WriteFile(ctx, ro, "w", nil, 0o644), mounts.ErrReadOnly)
	assert.ErrorIs(t, mounts.Rename(ctx, ro, "a", "b", 0), mounts.ErrReadOnly)
	_, err := mounts.StatFS(ctx, ro)
	assert.ErrorIs(t, err, mounts.ErrNotSupported)
	_, err = mounts.GetXattr(ctx, ro, "a", "user.k")
	assert.ErrorIs(t, err, mounts.ErrNotSupported)
	assert.Empty(t, r.take())

	assert.Equal(t, mounts.FS(stubFS{}), mounts.Observe(stubFS{}, nil), "nil fn is no wrapper")
}

// TestObserveConformance runs the conformance suite through the wrapper: it
// must be as faithful a mount as the one it wraps.
func TestObserveConformance(t *testing.T) {
	var r recorder
	mountstest.Run(t, func(t *testing.T) mounts.FS {
		return mounts.Observe(memfs.New(memfs.Options{}), r.fn)
	}, mountstest.Caps(mounts.CapMutating|mounts.CapXattr|mounts.CapStatFS))
	assert.NotEmpty(t, r.take(), "the suite's writes were observed")
}

// TestObserveForwardsEveryCapability: Observe offers exactly what it wraps
// (it once dropped StatDirFS), and no file it returns offers a host
// descriptor.
func TestObserveForwardsEveryCapability(t *testing.T) {
	var r recorder
	mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return mounts.Observe(f, r.fn) }, mountstest.HidesFd())
	assert.NotEmpty(t, r.take(), "the forwarded changes were observed")
}
