package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// TestLeaseAndFencing: two clients (two daemons) of one workspace. The
// second is refused while the first holds the lease, naming it and when
// it ends; it takes over; the first's next push fails its compare-and-swap
// of the head, says it is fenced, and it pushes no more; its checkpoint is
// not in the head.
func TestLeaseAndFencing(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	sa, sb := openSmall(t, srv, "p"), openSmall(t, srv, "p")
	e := newWS(t)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "x", []byte("from a"), 0o644))
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)

	a, err := sa.Acquire(ctx, "shared", AcquireOptions{Holder: "node-a", TTL: time.Hour})
	require.NoError(t, err)
	_, err = a.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)

	_, err = sb.Acquire(ctx, "shared", AcquireOptions{Holder: "node-b"})
	require.ErrorIs(t, err, ErrLeaseHeld)
	assert.ErrorContains(t, err, "node-a")
	assert.ErrorContains(t, err, time.Now().Add(time.Hour).UTC().Format("2006-01-02T15"), "names when the lease ends")

	b, err := sb.Acquire(ctx, "shared", AcquireOptions{Holder: "node-b", TakeOver: true})
	require.NoError(t, err)
	assert.Equal(t, "node-b", b.Head().Writer)
	assert.Len(t, b.Head().Checkpoints, 1, "b resumes a's checkpoint")

	// a goes on writing: fenced at its next push.
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "x", []byte("a, after the take-over"), 0o644))
	c2, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, e.ws, c2.ID, PushOptions{})
	require.ErrorIs(t, err, ErrFenced)
	assert.ErrorContains(t, err, "node-b")
	assert.ErrorIs(t, a.Fenced(), ErrFenced)
	_, err = a.Push(ctx, e.ws, c2.ID, PushOptions{})
	assert.ErrorIs(t, err, ErrFenced, "a fenced session pushes no more")
	assert.ErrorIs(t, a.Renew(ctx), ErrFenced)
	h, err := sb.Head(ctx, "shared")
	require.NoError(t, err)
	assert.Len(t, h.Checkpoints, 1, "a's push after the take-over is not in the head")
	assert.Equal(t, "node-b", h.Writer)

	// b writes.
	res, err := b.Push(ctx, e.ws, c2.ID, PushOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Ref.Seq)
	require.NoError(t, b.Renew(ctx))
	checkInvariant(t, sb)

	// Released, the lease is free for the next.
	require.NoError(t, b.Release(ctx))
	c, err := sa.Acquire(ctx, "shared", AcquireOptions{Holder: "node-c"})
	require.NoError(t, err)
	assert.Equal(t, "node-c", c.Head().Writer)
}

// TestLeaseExpires: a lease its holder stopped renewing is taken without
// taking over; the holder is fenced at its next renewal.
func TestLeaseExpires(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	sa := openSmall(t, srv, "p")
	a, err := sa.Acquire(ctx, "w", AcquireOptions{Holder: "node-a", TTL: time.Minute})
	require.NoError(t, err)
	later, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 2,
		Now: func() time.Time { return time.Now().Add(2 * time.Minute) }})
	require.NoError(t, err)
	_, err = later.Acquire(ctx, "w", AcquireOptions{Holder: "node-b"})
	require.NoError(t, err, "the lease ended")
	err = a.Renew(ctx)
	require.True(t, errors.Is(err, ErrFenced), "renewal after the lease was taken: %v", err)
}

// TestFork: a fork is a new head naming the same manifest; nothing is
// copied; forks resume side by side and diverge; a name that exists is
// refused.
func TestFork(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	fill(t, e.mem)
	edit(t, e.repo)
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	res, err := acquire(t, s, "base", "node-a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	before, err := s.list(ctx, "chunks")
	require.NoError(t, err)
	packsBefore, err := s.list(ctx, "packs")
	require.NoError(t, err)

	var forks []string
	start := time.Now()
	for i := range 10 {
		name := "fork" + string(rune('0'+i))
		ref, err := s.Fork(ctx, "base@1", name)
		require.NoError(t, err)
		assert.Equal(t, res.Ref.Manifest, ref.Manifest, "the same manifest")
		forks = append(forks, name)
	}
	t.Logf("10 forks in %v", time.Since(start))
	after, err := s.list(ctx, "chunks")
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "a fork copies no chunk")
	packsAfter, err := s.list(ctx, "packs")
	require.NoError(t, err)
	assert.NotEmpty(t, packsBefore)
	assert.Equal(t, len(packsBefore), len(packsAfter), "nor any pack")
	_, err = s.Fork(ctx, "base", "fork0")
	assert.ErrorIs(t, err, ErrExists)
	_, err = s.Fork(ctx, "nosuch@1", "x")
	assert.ErrorIs(t, err, ErrNotFound)
	h, err := s.Head(ctx, "fork3")
	require.NoError(t, err)
	assert.Equal(t, "base@1", h.ForkedFrom)

	// Two forks resume side by side, diverge, and push.
	var trees []mounts.FS
	for _, name := range forks[:2] {
		r, err := s.Resume(ctx, name)
		require.NoError(t, err)
		mem, err := r.Tree(ctx, "/memory", memOpts())
		require.NoError(t, err)
		trees = append(trees, mem)
		require.NoError(t, mounts.WriteFile(ctx, mem, "notes.md", []byte("by "+name), 0o644))
	}
	for i, tr := range trees {
		b, err := mounts.ReadFile(ctx, tr, "notes.md")
		require.NoError(t, err)
		assert.Equal(t, "by "+forks[i], string(b))
	}
}

func memOpts() memfs.Options { return memfs.Options{} }

// TestLeaseRenewedDuringPush: a push longer than the lease does not let it
// lapse: the session renews while it pushes.
func TestLeaseRenewedDuringPush(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	sa, sb := openSmall(t, srv, "p"), openSmall(t, srv, "p")
	e := newWS(t)
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "x", []byte("x"), 0o644))
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	a, err := sa.Acquire(ctx, "long", AcquireOptions{Holder: "node-a", TTL: 600 * time.Millisecond})
	require.NoError(t, err)
	a.KeepRenewing()
	defer a.Release(ctx)
	inPush := make(chan struct{})
	sa.hooks = func(p string) {
		if p == "push:chunks" {
			close(inPush)
			time.Sleep(1500 * time.Millisecond) // longer than the lease
		}
	}
	done := make(chan error)
	go func() {
		_, err := a.Push(ctx, e.ws, c1.ID, PushOptions{})
		done <- err
	}()
	<-inPush
	time.Sleep(1000 * time.Millisecond)
	_, err = sb.Acquire(ctx, "long", AcquireOptions{Holder: "node-b"})
	assert.ErrorIs(t, err, ErrLeaseHeld, "renewed during the push")
	require.NoError(t, <-done)
}
