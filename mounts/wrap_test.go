package mounts_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/mounts/mountstest"
)

func TestWrappersForwardEveryCapability(t *testing.T) {
	pass := func(_ context.Context, c mounts.Call) (mounts.Call, error) { return c, nil }
	t.Run("Intercept", func(t *testing.T) {
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return mounts.Intercept(f, mounts.Interceptor{}) })
	})
	t.Run("InterceptPassing", func(t *testing.T) {
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return mounts.Intercept(f, mounts.Interceptor{Call: pass}) })
	})
	t.Run("Watch", func(t *testing.T) {
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS { return mounts.Watch(f, mounts.Watcher{}) }, mountstest.HidesFd())
	})
	t.Run("WatchStatCreates", func(t *testing.T) {
		var w watchLog
		mountstest.RunWrapper(t, func(f mounts.FS) mounts.FS {
			return mounts.Watch(f, mounts.Watcher{Done: w.done, StatCreates: true})
		}, mountstest.HidesFd())
		assert.NotEmpty(t, w.take(), "the watcher was told")
	})
}

// watchLog records what a watcher is told, one line per call.
type watchLog struct {
	mu    sync.Mutex
	lines []string
}

func (w *watchLog) done(ctx context.Context, c mounts.Call, err error) {
	var b strings.Builder
	b.WriteString(c.Op.String() + " " + c.Name)
	if c.NewName != "" {
		b.WriteString(" -> " + c.NewName)
	}
	switch c.Op {
	case mounts.OpOpenFile:
		if c.Existed {
			b.WriteString(" existed")
		} else {
			b.WriteString(" new")
		}
	case mounts.OpFileTruncate, mounts.OpFileSync, mounts.OpFileClose:
		b.WriteString(" written=" + itoa(c.Written))
		if c.Changed {
			b.WriteString(" changed")
		}
	}
	if cl, ok := mounts.CallerFrom(ctx); ok {
		b.WriteString(" by " + cl.CallID)
	}
	if err != nil {
		b.WriteString(" err")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, b.String())
}

func (w *watchLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lines
	w.lines = nil
	return l
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// statCounter counts the Stats that reach the mount, through an
// interceptor.
type statCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *statCounter) wrap(f mounts.FS) mounts.FS {
	s.n = map[string]int{}
	return mounts.Intercept(f, mounts.Interceptor{Call: func(_ context.Context, c mounts.Call) (mounts.Call, error) {
		if c.Op == mounts.OpStat {
			s.mu.Lock()
			s.n[c.Name]++
			s.mu.Unlock()
		}
		return c, nil
	}})
}

func TestWatchTellsEveryCall(t *testing.T) {
	var stats statCounter
	mem := memfs.New(memfs.Options{})
	var w watchLog
	fsys := mounts.Watch(stats.wrap(mem), mounts.Watcher{Done: w.done, StatCreates: true})
	ctx := mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "c1"})
	other := mounts.WithCaller(context.Background(), mounts.Caller{Face: "tool", CallID: "c2"})

	f, err := mounts.OpenFile(ctx, fsys, "a", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	assert.Equal(t, 1, stats.n["a"], "StatCreates stats before an O_CREATE open")
	wf := f.(mounts.WritableFile)
	_, err = wf.WriteAt([]byte("hello"), 0)
	require.NoError(t, err)
	require.NoError(t, wf.Sync())
	require.NoError(t, wf.Sync())
	require.NoError(t, wf.Truncate(2))
	_, err = wf.WriteAt(nil, 0)
	require.NoError(t, err)
	require.NoError(t, wf.Close())
	assert.Error(t, wf.Close(), "a second close is the mount's to answer")
	assert.Equal(t, []string{
		"openfile a new by c1",
		"file sync a written=5 changed by c1",
		"file sync a written=5 by c1", // nothing since the last report
		"file truncate a written=5 by c1",
		"file close a written=5 changed by c1", // the truncate; the empty write is nothing
	}, w.take(), "file calls carry the caller of the open, and only the first close is told")

	for _, o := range []struct {
		flag int
		want string
	}{
		{os.O_WRONLY | os.O_CREATE, "openfile a existed by c2"},
		{os.O_WRONLY, "openfile a existed by c2"},
		{os.O_WRONLY | os.O_CREATE | os.O_EXCL, "openfile a new by c2 err"},
	} {
		f, err := mounts.OpenFile(other, fsys, "a", o.flag, 0o644)
		if err == nil {
			require.NoError(t, f.Close())
		}
		assert.Equal(t, o.want, w.take()[0], "flags %#x", o.flag)
	}
	assert.Equal(t, 2, stats.n["a"], "only O_CREATE without O_EXCL needs a Stat")

	require.NoError(t, mounts.Rename(ctx, fsys, "a", "b", 0))
	assert.Error(t, mounts.Mkdir(ctx, fsys, "nope/d", 0o755))
	_, err = fsys.Stat(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"rename a -> b by c1", "mkdir nope/d by c1 err", "stat b by c1"}, w.take())

	// Without StatCreates nothing is asked that the caller did not ask.
	stats.n = map[string]int{}
	plain := mounts.Watch(stats.wrap(mem), mounts.Watcher{Done: w.done})
	f, err = mounts.OpenFile(ctx, plain, "b", os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Zero(t, stats.n["b"])
	assert.Equal(t, []string{"openfile b new by c1", "file close b written=0 by c1"}, w.take(),
		"without StatCreates an O_CREATE open is not known to have existed")
}

func TestInterceptRefusesBeforeTheMount(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	fsys := mounts.Intercept(mem, mounts.Interceptor{Call: func(_ context.Context, c mounts.Call) (mounts.Call, error) {
		if strings.HasPrefix(c.Name, "locked") || strings.HasPrefix(c.NewName, "locked") {
			return c, mounts.PathErr(c.Op.String(), c.Name, mounts.ErrDenied)
		}
		return c, nil
	}})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("x"), 0o644))
	for name, err := range map[string]error{
		"mkdir":  mounts.Mkdir(ctx, fsys, "locked", 0o755),
		"write":  mounts.WriteFile(ctx, fsys, "locked", nil, 0o644),
		"rename": mounts.Rename(ctx, fsys, "a", "locked", 0),
		"link":   mounts.Link(ctx, fsys, "a", "locked"),
	} {
		assert.ErrorIs(t, err, mounts.ErrDenied, name)
	}
	_, err := mem.Stat(ctx, "locked")
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing reached the mount")
	_, err = mem.Stat(ctx, "a")
	assert.NoError(t, err)
}

func TestInterceptRewritesAndGivesNamesBack(t *testing.T) {
	ctx := context.Background()
	mem := memfs.New(memfs.Options{})
	require.NoError(t, mem.Mkdir(ctx, "sub", 0o755))
	under := func(n string) string {
		if n == "" {
			return ""
		}
		return mounts.Join("sub", n)
	}
	fsys := mounts.Intercept(mem, mounts.Interceptor{
		Call: func(_ context.Context, c mounts.Call) (mounts.Call, error) {
			c.Name, c.NewName = under(c.Name), under(c.NewName)
			c.Op = mounts.OpUnlink // ignored: the call stays what it was
			return c, nil
		},
		Capabilities: func(c mounts.Capability) mounts.Capability { return c &^ mounts.CapLink },
		Mounts: func(t []mounts.MountInfo) []mounts.MountInfo {
			return append(t, mounts.MountInfo{Prefix: "/sub"})
		},
	})
	require.NoError(t, mounts.WriteFile(ctx, fsys, "a", []byte("x"), 0o644))
	data, err := mounts.ReadFile(ctx, mem, "sub/a")
	require.NoError(t, err)
	assert.Equal(t, "x", string(data), "the call made is the rewritten one")

	for _, tt := range []struct {
		name string
		err  error
		path string
	}{
		{"stat", func() error { _, err := fsys.Stat(ctx, "nope"); return err }(), "nope"},
		{"rename old", mounts.Rename(ctx, fsys, "nope", "b", 0), "nope"},
		{"rename new", mounts.Rename(ctx, fsys, "a", "a/b", 0), "a/b"},
		{"mkdir", mounts.Mkdir(ctx, fsys, "a", 0o755), "a"},
	} {
		var pe *fs.PathError
		if assert.ErrorAs(t, tt.err, &pe, tt.name) {
			assert.Equal(t, tt.path, pe.Path, "%s: the error names the caller's name", tt.name)
		}
	}
	assert.Equal(t, mounts.Capabilities(mem)&^mounts.CapLink&^mounts.CapFreeze, mounts.Capabilities(fsys), "freezing is never forwarded")
	assert.Equal(t, []mounts.MountInfo{{Prefix: "/sub"}}, mounts.Mounts(fsys))
}

func TestOpNames(t *testing.T) {
	seen := map[string]bool{}
	for op := mounts.OpStat; op <= mounts.OpFileClose; op++ {
		s := op.String()
		assert.NotContains(t, s, "op(", "op %d has a name", op)
		assert.False(t, seen[s], "op name %q is unique", s)
		seen[s] = true
	}
	assert.Equal(t, "op(200)", mounts.Op(200).String())
}
