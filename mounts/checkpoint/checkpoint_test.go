package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/gitfs"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/overlayfs"
)

type env struct {
	mem *memfs.FS
	ov  *overlayfs.FS
	ws  *checkpoint.Workspace
}

func newEnv(t *testing.T, opts checkpoint.Options) *env {
	t.Helper()
	ctx := context.Background()
	lower := memfs.New(memfs.Options{})
	require.NoError(t, mounts.WriteFile(ctx, lower, "lower.txt", []byte("lower"), 0o644))
	require.NoError(t, mounts.Mkdir(ctx, lower, "dir", 0o755))
	require.NoError(t, mounts.WriteFile(ctx, lower, "dir/x", []byte("x"), 0o644))
	upper := memfs.New(memfs.Options{})
	ov, err := overlayfs.New(ctx, lower, upper, overlayfs.Options{LowerID: "test"})
	require.NoError(t, err)
	mem := memfs.New(memfs.Options{})
	ws, err := checkpoint.New([]checkpoint.Mount{
		{Prefix: "/repo", Type: "git", Source: "copy-on-write over test", Tree: ov},
		{Prefix: "/memory", Type: "memory", Source: "memory", Tree: mem},
		{Prefix: "/host", Type: "host", Source: "/somewhere"},
		{Prefix: "/ro", Type: "git", Source: "git@abc", Immutable: true},
	}, opts)
	require.NoError(t, err)
	return &env{mem: mem, ov: ov, ws: ws}
}

func read(t *testing.T, fsys mounts.FS, name string) string {
	t.Helper()
	b, err := mounts.ReadFile(context.Background(), fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	require.NoError(t, err)
	return string(b)
}

func TestCreateRestoreAcrossMounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes", []byte("v1"), 0o644))
	c1, err := e.ws.Create(ctx, "before")
	require.NoError(t, err)
	assert.Equal(t, "before", c1.Name)
	assert.Equal(t, []checkpoint.Entry{
		{Prefix: "/host", Type: "host", Source: "/somewhere", Coverage: checkpoint.NotCovered},
		{Prefix: "/memory", Type: "memory", Source: "memory", Coverage: checkpoint.Frozen},
		{Prefix: "/repo", Type: "git", Source: "copy-on-write over test", Coverage: checkpoint.Frozen},
		{Prefix: "/ro", Type: "git", Source: "git@abc", Coverage: checkpoint.Immutable},
	}, c1.Manifest)

	// Change both: edit a lower file (copy-up), delete one, rename a
	// directory, and write memory.
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "lower.txt", []byte("edited"), 0o644))
	require.NoError(t, mounts.Rename(ctx, e.ov, "dir", "moved", 0))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "new.txt", []byte("new"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes", []byte("v2"), 0o644))
	var seen []string
	e.ws.OnRestore(func(p []string) { seen = append(seen, p...) })

	res, err := e.ws.Restore(ctx, c1.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"/memory", "/repo"}, res.Restored)
	assert.Equal(t, []string{"/host"}, res.NotCovered, "a host mount is reported, not skipped silently")
	assert.Equal(t, "lower", read(t, e.ov, "lower.txt"))
	assert.Equal(t, "x", read(t, e.ov, "dir/x"))
	assert.Equal(t, "<none>", read(t, e.ov, "moved/x"))
	assert.Equal(t, "<none>", read(t, e.ov, "new.txt"))
	assert.Equal(t, "v1", read(t, e.mem, "notes"))
	changes, err := e.ov.Changes(ctx)
	require.NoError(t, err)
	assert.Empty(t, changes, "the overlay is back to its lower")
	for _, p := range []string{"/repo/lower.txt", "/repo/dir", "/repo/moved", "/repo/new.txt", "/memory/notes"} {
		assert.Contains(t, res.Changed, p)
		assert.Contains(t, seen, p, "the restore hook is told")
	}
	// The overlay works on after it.
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "dir/x", []byte("again"), 0o644))
	assert.Equal(t, "again", read(t, e.ov, "dir/x"))
}

func TestUnknownIDAndNoWritable(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "f", []byte("1"), 0o644))
	_, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "f", []byte("2"), 0o644))
	_, err = e.ws.Restore(ctx, "c9", nil)
	assert.ErrorIs(t, err, checkpoint.ErrUnknown)
	assert.ErrorContains(t, err, `"c9"`)
	assert.Equal(t, "2", read(t, e.mem, "f"), "nothing changed")
	assert.ErrorIs(t, e.ws.Delete(ctx, "c9"), checkpoint.ErrUnknown)
	_, err = e.ws.Restore(ctx, "c1", []string{"/nowhere"})
	assert.ErrorIs(t, err, checkpoint.ErrBadPath)

	_, err = checkpoint.New([]checkpoint.Mount{{Prefix: "/ro", Immutable: true}, {Prefix: "/host"}}, checkpoint.Options{})
	assert.ErrorIs(t, err, checkpoint.ErrNoWritable)
}

func TestRestoreSomeMounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	c, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "m", []byte("m"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "r", []byte("r"), 0o644))
	res, err := e.ws.Restore(ctx, c.ID, []string{"/memory"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/memory"}, res.Restored)
	assert.Equal(t, "<none>", read(t, e.mem, "m"))
	assert.Equal(t, "r", read(t, e.ov, "r"), "the other mount is left alone")
}

func TestKeepDropsTheOldest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{Keep: 3})
	for i := range 5 {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, "f", []byte(fmt.Sprint(i)), 0o644))
		_, err := e.ws.Create(ctx, "")
		require.NoError(t, err)
	}
	var ids []string
	for _, c := range e.ws.List() {
		ids = append(ids, c.ID)
		assert.Positive(t, c.Bytes)
	}
	assert.Equal(t, []string{"c3", "c4", "c5"}, ids)
	_, err := e.ws.Restore(ctx, "c3", nil)
	require.NoError(t, err)
	assert.Equal(t, "2", read(t, e.mem, "f"))
	v, err := e.ws.View(ctx, "c4", "/memory")
	require.NoError(t, err)
	assert.Equal(t, "3", read(t, v, "f"))
}

// TestRestoreIsAtomicToReaders restores back and forth between two states
// while readers read a file of several pages whose every byte tells the
// state: a read sees one state or the other, never a mix of pages.
func TestRestoreIsAtomicToReaders(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	const size = 300 << 10
	write := func(v byte) {
		for _, fsys := range []mounts.FS{e.mem, e.ov} {
			require.NoError(t, mounts.WriteFile(ctx, fsys, "a", bytes.Repeat([]byte{v}, size), 0o644))
		}
	}
	write('1')
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	write('2')
	c2, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, fsys := range []mounts.FS{e.mem, e.ov} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := mounts.ReadFile(ctx, fsys, "a")
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) != size || (!bytes.Equal(b, bytes.Repeat([]byte{'1'}, size)) && !bytes.Equal(b, bytes.Repeat([]byte{'2'}, size))) {
					t.Errorf("a torn read: %d bytes, first %q last %q", len(b), b[0], b[len(b)-1])
					return
				}
			}
		}()
	}
	for i := range 40 {
		id, want := c1.ID, "1"
		if i%2 == 1 {
			id, want = c2.ID, "2"
		}
		_, err := e.ws.Restore(ctx, id, nil)
		require.NoError(t, err)
		assert.Equal(t, want, read(t, e.mem, "a")[:1])
		assert.Equal(t, want, read(t, e.ov, "a")[size-1:])
	}
	close(stop)
	wg.Wait()
}

func TestRestorePathsInsideMounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "m1", []byte("1"), 0o644))
	c, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "lower.txt", []byte("edited"), 0o644))
	require.NoError(t, mounts.Unlink(ctx, e.ov, "dir/x"))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "new.txt", []byte("new"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "m1", []byte("2"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "m2", []byte("2"), 0o644))

	res, err := e.ws.Restore(ctx, c.ID, []string{"/repo/lower.txt", "/repo/dir/x", "/memory/m1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/memory", "/repo"}, res.Restored)
	assert.Equal(t, "lower", read(t, e.ov, "lower.txt"))
	assert.Equal(t, "x", read(t, e.ov, "dir/x"), "a deleted lower file comes back")
	assert.Equal(t, "new", read(t, e.ov, "new.txt"), "what was not named stays")
	assert.Equal(t, "1", read(t, e.mem, "m1"))
	assert.Equal(t, "2", read(t, e.mem, "m2"))
	assert.Contains(t, res.Changed, "/repo/lower.txt")
	assert.Contains(t, res.Changed, "/repo/dir/x")
	assert.Contains(t, res.Changed, "/memory/m1")
	changes, err := e.ov.Changes(ctx)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	assert.Equal(t, "new.txt", changes[0].Path)
}

// TestRestoreUnderConcurrentWriters restores while writers rewrite files
// of several pages: no write is half applied (every file holds one write's
// bytes whole), and a write made after a restore returned is what the tree
// shows.
func TestRestoreUnderConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	const size = 200 << 10
	for _, fsys := range []mounts.FS{e.mem, e.ov} {
		require.NoError(t, mounts.WriteFile(ctx, fsys, "w0", bytes.Repeat([]byte{'a'}, size), 0o644))
	}
	c, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, fsys := range []mounts.FS{e.mem, e.ov, e.mem, e.ov} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("w", w%2)
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := mounts.WriteFile(ctx, fsys, name, bytes.Repeat([]byte{byte('b' + r%20)}, size), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 30 {
		_, err := e.ws.Restore(ctx, c.ID, nil)
		require.NoError(t, err)
		marker := []byte(fmt.Sprint("after restore ", i))
		require.NoError(t, mounts.WriteFile(ctx, e.mem, "marker", marker, 0o644))
		assert.Equal(t, string(marker), read(t, e.mem, "marker"), "a write after the restore lands on the restored tree")
	}
	close(stop)
	wg.Wait()
	for _, fsys := range []mounts.FS{e.mem, e.ov} {
		for _, name := range []string{"w0", "w1"} {
			b, err := mounts.ReadFile(ctx, fsys, name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // restored to before it was first written
			}
			require.NoError(t, err)
			require.Len(t, b, size, name)
			assert.Equal(t, bytes.Repeat(b[:1], size), b, "%s holds one write whole", name)
		}
	}
}

// TestRestoreIsJournaled: a restore changes an overlay's upper below the
// overlay, and its change journal (what git's fsmonitor hook is answered
// from) names what the restore changed, or git status would miss it.
func TestRestoreIsJournaled(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	c, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "lower.txt", []byte("edited"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.ov, "dir/new", []byte("new"), 0o644))
	token := e.ov.Journal().Token()
	_, err = e.ws.Restore(ctx, c.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, "lower", read(t, e.ov, "lower.txt"))
	_, names, all := e.ov.Journal().Since(token)
	require.False(t, all)
	assert.Contains(t, names, "lower.txt")
	assert.Contains(t, names, "dir/new")
}

// TestDiff: the library's diff between checkpoints and now, as git prints
// it, names under their mount; a bad id or path is refused.
func TestDiff(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, checkpoint.Options{})
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes", []byte("v1\n"), 0o644))
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "notes", []byte("v2\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "added", []byte("new\n"), 0o644))
	c2, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	require.NoError(t, mounts.Remove(ctx, e.ov, "lower.txt"))

	text, err := e.ws.Diff(ctx, c1.ID, c2.ID, gitfs.NameStatus)
	require.NoError(t, err)
	assert.Equal(t, "A\tmemory/added\nM\tmemory/notes\n", text)
	text, err = e.ws.Diff(ctx, c2.ID, "", gitfs.NameStatus)
	require.NoError(t, err)
	assert.Equal(t, "D\trepo/lower.txt\n", text)
	text, err = e.ws.Diff(ctx, c1.ID, "", gitfs.Patch, "/memory/notes")
	require.NoError(t, err)
	assert.Contains(t, text, "-v1\n+v2\n")
	assert.NotContains(t, text, "added")

	_, err = e.ws.Diff(ctx, "nope", "", gitfs.Patch)
	assert.ErrorIs(t, err, checkpoint.ErrUnknown)
	_, err = e.ws.Diff(ctx, c1.ID, "", gitfs.Patch, "/elsewhere/x")
	assert.ErrorIs(t, err, checkpoint.ErrBadPath)
}
