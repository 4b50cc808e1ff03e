package workspace_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/agentbridge/jsonrpc"
	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
	"github.com/vfsmount/vfsmount/store"
	"github.com/vfsmount/vfsmount/workspace"
)

// TestStorePushAndSync: a workspace attached to a store pushes on demand
// (store.push) and, with a sync interval, by itself and at a clean close;
// another client resumes what was written last.
func TestStorePushAndSync(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, "vfsm")
	s, err := store.Open(ctx, store.Config{URL: "s3://vfsm/p", Endpoint: srv.Endpoint, MaxAttempts: 2})
	require.NoError(t, err)
	mem := memfs.New(memfs.Options{})
	ws, err := workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{{Prefix: "/memory", FS: mem}}})
	require.NoError(t, err)
	ss, err := s.Acquire(ctx, "w", store.AcquireOptions{Holder: "test"})
	require.NoError(t, err)
	require.NoError(t, ws.AttachStore(workspace.StoreOptions{Session: ss, URL: "s3://vfsm/p/w", Sync: 100 * time.Millisecond}))

	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("one"), 0o644))
	res, err := ws.Checkpoints.StorePush(ctx, jsonrpc.StorePushParams{})
	require.NoError(t, err)
	assert.Equal(t, "s3://vfsm/p/w@"+itoa(res.Seq), res.URL)
	_, err = ws.Checkpoints.StorePush(ctx, jsonrpc.StorePushParams{ID: "c99"})
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)

	// The sync loop pushes a change by itself.
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("two"), 0o644))
	require.Eventually(t, func() bool {
		return readStore(t, s, "w", "a") == "two"
	}, 10*time.Second, 50*time.Millisecond, "pushed by the sync loop")

	// A clean close pushes the last change and lets the lease go.
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("three"), 0o644))
	require.NoError(t, ws.Close())
	assert.Equal(t, "three", readStore(t, s, "w", "a"))
	_, err = s.Acquire(ctx, "w", store.AcquireOptions{Holder: "another"})
	require.NoError(t, err, "the lease was let go at close")
}

func itoa(n int) string { return string(rune('0' + n)) }

func readStore(t *testing.T, s *store.Store, name, file string) string {
	t.Helper()
	ctx := context.Background()
	r, err := s.Resume(ctx, name)
	require.NoError(t, err)
	m, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.NoError(t, err)
	b, err := mounts.ReadFile(ctx, m, file)
	require.NoError(t, err)
	return string(b)
}

// TestStoreSyncWhileUnreachable: the store down, the workspace works on
// locally and the sync loop's pushes fail; once it is back, the next tick
// pushes what changed meanwhile.
func TestStoreSyncWhileUnreachable(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, "vfsm")
	s, err := store.Open(ctx, store.Config{URL: "s3://vfsm/p", Endpoint: srv.Endpoint, MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	mem := memfs.New(memfs.Options{})
	ws, err := workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{{Prefix: "/memory", FS: mem}}})
	require.NoError(t, err)
	ss, err := s.Acquire(ctx, "w", store.AcquireOptions{Holder: "test"})
	require.NoError(t, err)
	log := &testutil.Buffer{}
	require.NoError(t, ws.AttachStore(workspace.StoreOptions{Session: ss, URL: "s3://vfsm/p/w", Sync: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, nil))}))
	srv.Stop()
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("while down"), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "the store is behind") }, 10*time.Second, 20*time.Millisecond)
	b, err := mounts.ReadFile(ctx, mem, "a")
	require.NoError(t, err)
	assert.Equal(t, "while down", string(b), "the workspace works on locally")
	srv.Start()
	require.Eventually(t, func() bool {
		r, err := s.Resume(ctx, "w")
		if err != nil {
			return false
		}
		m, err := r.Tree(ctx, "/memory", memfs.Options{})
		if err != nil {
			return false
		}
		b, err := mounts.ReadFile(ctx, m, "a")
		return err == nil && string(b) == "while down"
	}, 20*time.Second, 100*time.Millisecond, "pushed once the store is back")
	require.NoError(t, ws.Close())
}

// TestStoreStatusBehind: store.status says the store holds the workspace
// while pushes go through; with the server down, after a failed sync push,
// that it is behind, since when and why, while the workspace works on
// locally; once the server is back, that it caught up; and, once another
// daemon took the workspace over, that pushes stopped (fenced).
func TestStoreStatusBehind(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, "vfsm")
	s, err := store.Open(ctx, store.Config{URL: "s3://vfsm/p", Endpoint: srv.Endpoint, MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	mem := memfs.New(memfs.Options{})
	ws, err := workspace.Open(ctx, workspace.Options{Mounts: []workspace.Mount{{Prefix: "/memory", FS: mem}}})
	require.NoError(t, err)
	defer ws.Close()
	ss, err := s.Acquire(ctx, "w", store.AcquireOptions{Holder: "test"})
	require.NoError(t, err)
	require.NoError(t, ws.AttachStore(workspace.StoreOptions{Session: ss, URL: "s3://vfsm/p/w", Sync: 50 * time.Millisecond}))
	status := func() jsonrpc.StoreStatusResult {
		t.Helper()
		st, err := ws.Checkpoints.StoreStatus(ctx)
		require.NoError(t, err)
		return st
	}

	st := status()
	assert.Equal(t, "s3://vfsm/p/w", st.URL)
	assert.Equal(t, "w", st.Name)
	assert.Equal(t, "50ms", st.Sync)
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("one"), 0o644))
	require.Eventually(t, func() bool { st = status(); return st.LastPush != nil && !st.Unpushed }, 10*time.Second, 10*time.Millisecond, "pushed by the sync loop")
	assert.False(t, st.Behind)
	assert.False(t, st.Fenced)
	assert.Empty(t, st.LastError)
	assert.Nil(t, st.FailingSince)
	first := *st.LastPush
	assert.Equal(t, "s3://vfsm/p/w@"+itoa(first.Seq), first.URL)
	assert.False(t, first.Time.IsZero())

	// The server down: the next sync push fails; the store is behind.
	srv.Stop()
	before := time.Now()
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("while down"), 0o644))
	require.Eventually(t, func() bool { st = status(); return st.Behind }, 20*time.Second, 10*time.Millisecond, "behind once a push failed")
	assert.Contains(t, st.LastError, "unreachable")
	require.NotNil(t, st.FailingSince)
	assert.False(t, st.FailingSince.Before(before), "failing since the first failure after the server went down")
	assert.GreaterOrEqual(t, st.Failures, 1)
	assert.True(t, st.Unpushed)
	assert.Equal(t, first, *st.LastPush, "the last push that went through")
	assert.False(t, st.Fenced)
	b, err := mounts.ReadFile(ctx, mem, "a")
	require.NoError(t, err)
	assert.Equal(t, "while down", string(b), "the workspace works on locally")

	// The server back: the next tick catches up.
	srv.Start()
	require.Eventually(t, func() bool { st = status(); return !st.Behind && !st.Unpushed }, 20*time.Second, 10*time.Millisecond, "caught up")
	assert.Greater(t, st.LastPush.Seq, first.Seq)
	assert.Nil(t, st.FailingSince)
	assert.Zero(t, st.Failures)
	assert.Equal(t, "while down", readStore(t, s, "w", "a"))

	// Another daemon takes the workspace over: the next push is fenced,
	// and the status says pushes stopped.
	_, err = s.Acquire(ctx, "w", store.AcquireOptions{Holder: "other", TakeOver: true})
	require.NoError(t, err)
	require.NoError(t, mounts.WriteFile(ctx, mem, "a", []byte("after the take-over"), 0o644))
	require.Eventually(t, func() bool { st = status(); return st.Fenced }, 20*time.Second, 10*time.Millisecond, "fenced")
	assert.True(t, st.Behind)
	assert.Contains(t, st.Why, "taken over")
}

// TestStoreResumeRefusesOtherMounts: store.resume of a checkpoint that
// holds a writable mount this workspace lacks, or a ref the store lacks,
// is bad input and changes nothing.
func TestStoreResumeRefusesOtherMounts(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, "vfsm")
	s, err := store.Open(ctx, store.Config{URL: "s3://vfsm/p", Endpoint: srv.Endpoint, MaxAttempts: 2})
	require.NoError(t, err)
	open := func(name string, prefixes ...string) *workspace.Workspace {
		var ms []workspace.Mount
		for _, p := range prefixes {
			ms = append(ms, workspace.Mount{Prefix: p, FS: memfs.New(memfs.Options{})})
		}
		ws, err := workspace.Open(ctx, workspace.Options{Mounts: ms})
		require.NoError(t, err)
		t.Cleanup(func() { ws.Close() })
		ss, err := s.Acquire(ctx, name, store.AcquireOptions{Holder: "test-" + name})
		require.NoError(t, err)
		require.NoError(t, ws.AttachStore(workspace.StoreOptions{Session: ss, URL: "s3://vfsm/p/" + name}))
		return ws
	}
	both := open("both", "/memory", "/notes")
	require.NoError(t, mounts.WriteFile(ctx, both.Union, "notes/n", []byte("n"), 0o644))
	_, err = both.Checkpoints.StorePush(ctx, jsonrpc.StorePushParams{})
	require.NoError(t, err)

	one := open("one", "/memory")
	require.NoError(t, mounts.WriteFile(ctx, one.Union, "memory/mine", []byte("mine"), 0o644))
	_, err = one.Checkpoints.StoreResume(ctx, jsonrpc.StoreResumeParams{Ref: "both"})
	require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	assert.ErrorContains(t, err, "/notes")
	_, err = one.Checkpoints.StoreResume(ctx, jsonrpc.StoreResumeParams{Ref: "nosuch"})
	require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	_, err = one.Checkpoints.StoreResume(ctx, jsonrpc.StoreResumeParams{Ref: "s3://other/p/both"})
	require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	b, err := mounts.ReadFile(ctx, one.Union, "memory/mine")
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "nothing changed")
	st, err := one.Checkpoints.StoreStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", st.Name, "still writing its own workspace")
}
