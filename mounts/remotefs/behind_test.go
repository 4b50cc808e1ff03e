package remotefs_test

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

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/hostfs"
	"github.com/vfsmount/vfsmount/mounts/remotefs"
)

// kernelCtx is a context of a program's system call: the calls the
// remote mount may answer before the peer does.
func kernelCtx() context.Context {
	return mounts.WithCaller(context.Background(), mounts.Caller{Uid: 0, Gid: 0, Face: mounts.FaceKernel})
}

// A program's changes through the kernel (a tar: a directory, files
// created, written, their mode and times set, closed; a file removed) are
// answered without waiting for the peer; fsync of a directory waits for
// all of them and puts them on the remote disk; what the cache then says
// of every name is what the peer made, and a file keeps the number it
// was given before the peer answered.
func TestPostedChangesWaitForNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/old"), []byte("old"), 0o644))
	fsys := newLink(t, dir).open(t, false)
	ctx := kernelCtx()
	_, _, err := mounts.StatDir(ctx, fsys, "d")
	require.NoError(t, err)
	waited, posted := remotefs.Requests(fsys), remotefs.Posted(fsys)

	mtime := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	require.NoError(t, mounts.Mkdir(ctx, fsys, "d/sub", 0o750))
	var inos []uint64
	for _, name := range []string{"d/a.txt", "d/sub/b.txt"} {
		f, err := mounts.OpenFile(ctx, fsys, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		_, err = f.(mounts.WritableFile).WriteAt([]byte("content of "+name), 0)
		require.NoError(t, err)
		require.NoError(t, mounts.Chmod(ctx, fsys, name, 0o640))
		require.NoError(t, mounts.Chtimes(ctx, fsys, name, mtime, mtime))
		a, err := f.Stat()
		require.NoError(t, err)
		assert.NotZero(t, a.Ino&remotefs.InoLocal, "a number given here")
		inos = append(inos, a.Ino)
		require.NoError(t, f.Close())
	}
	// Written, its times not set: the times it was answered with are
	// the ones the peer gives it (the daemon's clock, sent with the
	// create and the write).
	f, err := mounts.OpenFile(ctx, fsys, "d/untimed", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt([]byte("x"), 0)
	require.NoError(t, err)
	told, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, mounts.Unlink(ctx, fsys, "d/old"))
	// Looked up as a program would next: from what the changes made.
	_, err = fsys.Stat(ctx, "d/old")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fsys.Stat(ctx, "d/sub/c.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, waited, remotefs.Requests(fsys), "no call waited for the peer")
	assert.Greater(t, remotefs.Posted(fsys), posted)

	require.NoError(t, mounts.Sync(ctx, fsys, "d"), "fsync of the directory: the barrier")
	for _, name := range []string{"d/a.txt", "d/sub/b.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, "on the remote disk after fsync of the directory")
		assert.Equal(t, "content of "+name, string(b))
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o640), st.Mode().Perm(), name)
		assert.True(t, st.ModTime().Equal(mtime), "%s: %v", name, st.ModTime())
	}
	st, err := os.Stat(filepath.Join(dir, "d/untimed"))
	require.NoError(t, err)
	assert.True(t, st.ModTime().Equal(told.Mtime), "the mtime told %v, on the remote disk %v", told.Mtime, st.ModTime())
	st, err = os.Stat(filepath.Join(dir, "d/sub"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o750), st.Mode().Perm())
	_, err = os.Stat(filepath.Join(dir, "d/old"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// The peer's answers kept; the numbers are the ones given.
	for i, name := range []string{"d/a.txt", "d/sub/b.txt"} {
		a, err := fsys.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, inos[i], a.Ino, "%s keeps its number", name)
		assert.EqualValues(t, len("content of "+name), a.Size)
		assert.True(t, a.Mtime.Equal(mtime))
	}
	ents, err := fsys.ReadDir(ctx, "d")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "sub", "untimed"}, names(ents))
}

// refusing is a host directory whose files named *.refused cannot be
// created: what the peer meets after the daemon answered (a name taken
// meanwhile, a full disk, a quota).
type refusing struct{ *hostfs.FS }

func (r refusing) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	if strings.HasSuffix(name, ".refused") && flag&os.O_CREATE != 0 {
		return nil, mounts.PathErr("open", name, syscall.EDQUOT)
	}
	return r.FS.OpenFile(ctx, name, flag, perm)
}

// A change answered here that the peer then refuses is an error for the
// program: at the file's fsync, at the fsync of a directory (once), in
// the log; and the name is what the peer says (no file).
func TestPostedErrorsAtFsync(t *testing.T) {
	dir := t.TempDir()
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	fsys := serveLink(t, dir, refusing{host.(*hostfs.FS)}).open(t, false)
	ctx := kernelCtx()
	_, _, err = mounts.StatDir(ctx, fsys, ".")
	require.NoError(t, err)

	// Closed before the refusal is known: the directory's fsync.
	f, err := mounts.OpenFile(ctx, fsys, "a.refused", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err, "answered here")
	_, _ = f.(mounts.WritableFile).WriteAt([]byte("lost"), 0)
	_ = f.Close()
	err = mounts.Sync(ctx, fsys, ".")
	require.ErrorIs(t, err, syscall.EDQUOT, "the refusal, at the directory's fsync")
	require.NoError(t, mounts.Sync(ctx, fsys, "."), "reported once")
	_, err = fsys.Stat(ctx, "a.refused")
	require.ErrorIs(t, err, fs.ErrNotExist, "the name is what the peer says")

	// Still open: the file's fsync.
	f, err = mounts.OpenFile(ctx, fsys, "b.refused", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	_, _ = f.(mounts.WritableFile).WriteAt([]byte("lost"), 0)
	err = f.(mounts.WritableFile).Sync()
	require.ErrorIs(t, err, syscall.EDQUOT, "the refusal, at the file's fsync")
	_ = f.Close()
}

// stalling is a host directory whose directories named stall* are made
// only once gate is closed: a change the peer is slow to apply.
type stalling struct {
	*hostfs.FS
	gate chan struct{}
}

func (s stalling) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if strings.HasPrefix(name, "stall") {
		<-s.gate
	}
	return s.FS.Mkdir(ctx, name, perm)
}

// A link lost with changes answered here and not by the peer: they are
// the next fsync's error, never dropped silently.
func TestPostedChangesLostWithTheLink(t *testing.T) {
	dir := t.TempDir()
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	gate := make(chan struct{})
	l := serveLink(t, dir, stalling{host.(*hostfs.FS), gate})
	t.Cleanup(func() { close(gate) }) // before the link's own cleanup
	fsys := l.open(t, false)
	ctx := kernelCtx()
	_, _, err = mounts.StatDir(ctx, fsys, ".")
	require.NoError(t, err)
	require.NoError(t, mounts.Mkdir(ctx, fsys, "stalled", 0o755), "answered here")
	require.NoError(t, mounts.Mkdir(ctx, fsys, "after", 0o755), "answered here")
	l.cut() // the link drops with both unanswered
	err = mounts.Sync(ctx, fsys, ".")
	require.Error(t, err)
	assert.True(t, errors.Is(err, remotefs.ErrLinkDown), "%v", err)
	assert.Contains(t, err.Error(), "and 1 more")
}

// Through the tool face nothing is posted: each change is answered by
// the peer, with its own error.
func TestToolChangesAreNotPosted(t *testing.T) {
	dir := t.TempDir()
	fsys := newLink(t, dir).open(t, false)
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Face: mounts.FaceTool})
	_, _, err := mounts.StatDir(ctx, fsys, ".")
	require.NoError(t, err)
	posted := remotefs.Posted(fsys)
	require.NoError(t, mounts.Mkdir(ctx, fsys, "d", 0o755))
	f, err := mounts.OpenFile(ctx, fsys, "d/x", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, posted, remotefs.Posted(fsys))
	_, err = os.Stat(filepath.Join(dir, "d/x"))
	require.NoError(t, err, "on the remote disk when the call returned")
}

// The change stream reports every change the daemon posted, a moment
// later: those reports are its own changes coming back, and cost nothing:
// the directory's listing stays kept, so the next file a program
// creates there, and a listing of it, wait for no round trip.
func TestPostedChangesComingBackKeepTheListing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "m"), 0o755))
	fsys := newLink(t, dir).open(t, false)
	ctx := kernelCtx()
	_, _, err := mounts.StatDir(ctx, fsys, "d")
	require.NoError(t, err)
	for i := range 5 {
		name := filepath.Join("d", string(rune('a'+i)))
		f, err := mounts.OpenFile(ctx, fsys, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		require.NoError(t, err)
		_, err = f.(mounts.WritableFile).WriteAt([]byte("x"), 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	require.NoError(t, mounts.Sync(ctx, fsys, "d"))
	// The reports of those changes come after their answers, in the
	// order inotify saw them: once a file made on the remote machine
	// after them is seen, they have all come.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m/marker"), nil, 0o644))
	require.Eventually(t, func() bool {
		_, err := fsys.Stat(ctx, "m/marker")
		return err == nil
	}, 5*time.Second, time.Millisecond, "the change stream's reports came")
	waited := remotefs.Requests(fsys)
	ents, err := fsys.ReadDir(ctx, "d")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, names(ents))
	f, err := mounts.OpenFile(ctx, fsys, "d/f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, waited, remotefs.Requests(fsys), "the listing was kept through the reports")
}

// full is a host directory whose files named *.full take no write: a
// disk that filled after the file was opened.
type full struct{ *hostfs.FS }

func (f full) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (mounts.File, error) {
	file, err := f.FS.OpenFile(ctx, name, flag, perm)
	if err == nil && strings.HasSuffix(name, ".full") {
		if w, ok := file.(mounts.WritableFile); ok {
			return fullFile{w}, nil
		}
	}
	return file, err
}

type fullFile struct{ mounts.WritableFile }

func (fullFile) WriteAt(p []byte, off int64) (int, error) { return 0, syscall.ENOSPC }

// A write of a file that existed (not posted: the open asked the peer),
// refused after it was answered, is said at the file's fsync; and when
// the file is closed before any fsync (the kernel face closes its files
// when it no longer needs them, long after close(2), with no caller to
// tell), at the next fsync of a directory, once. What the file's fsync
// said is not said again.
func TestWriteErrorsOutliveTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.full", "b.full"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644))
	}
	host, err := hostfs.Open(dir, hostfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { host.(*hostfs.FS).Close() })
	fsys := serveLink(t, dir, full{host.(*hostfs.FS)}).open(t, false)
	ctx := kernelCtx()

	f, err := mounts.OpenFile(ctx, fsys, "a.full", os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt([]byte("new"), 0)
	require.NoError(t, err, "pipelined: answered before the peer's")
	require.ErrorIs(t, f.Close(), syscall.ENOSPC)
	require.ErrorIs(t, mounts.Sync(ctx, fsys, "."), syscall.ENOSPC, "closed unsaid: the directory's fsync")
	require.NoError(t, mounts.Sync(ctx, fsys, "."), "said once")

	f, err = mounts.OpenFile(ctx, fsys, "b.full", os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.(mounts.WritableFile).WriteAt([]byte("new"), 0)
	require.NoError(t, err)
	require.ErrorIs(t, f.(mounts.WritableFile).Sync(), syscall.ENOSPC, "the file's fsync")
	require.ErrorIs(t, f.Close(), syscall.ENOSPC)
	require.NoError(t, mounts.Sync(ctx, fsys, "."), "said at the file's fsync: not again")
	b, err := os.ReadFile(filepath.Join(dir, "b.full"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
}
