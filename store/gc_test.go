package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/checkpoint"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// pushMem pushes a workspace whose memory mount holds files (name:
// content) to workspace name of s.
func pushMem(t *testing.T, s *Store, name string, files map[string][]byte) (*wsEnv, PushResult) {
	t.Helper()
	ctx := context.Background()
	e := newWS(t)
	for n, b := range files {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, n, b, 0o644))
	}
	c, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	res, err := acquire(t, s, name, "node-"+name).Push(ctx, e.ws, c.ID, PushOptions{})
	require.NoError(t, err)
	return e, res
}

// TestGC: what no head names goes (a deleted workspace's manifest and the
// chunks only it named; a dropped checkpoint's); what a head or a fork
// names stays; the grace period keeps young garbage.
func TestGC(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openObjects(t, srv, "p")
	shared := bytes.Repeat([]byte("shared"), 1000)
	pushMem(t, s, "keep", map[string][]byte{"a": shared, "k": []byte("only keep")})
	pushMem(t, s, "gone", map[string][]byte{"a": shared, "g": []byte("only gone")})
	pushMem(t, s, "forked", map[string][]byte{"f": []byte("only forked")})
	_, err := s.Fork(ctx, "forked", "fork")
	require.NoError(t, err)
	require.NoError(t, s.DeleteWorkspace(ctx, "gone"))
	require.NoError(t, s.DeleteWorkspace(ctx, "forked"))

	res, err := s.GC(ctx, GCOptions{})
	require.NoError(t, err)
	assert.Zero(t, res.ChunksDeleted+res.ManifestsDeleted, "the grace period keeps what is young")

	res, err = s.GC(ctx, GCOptions{Grace: -1, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 1, res.ManifestsDeleted)
	assert.Equal(t, 1, res.ChunksDeleted, "only gone's own chunk")
	res, err = s.GC(ctx, GCOptions{Grace: -1})
	require.NoError(t, err)
	assert.Equal(t, GCResult{Workspaces: 2, Manifests: 3, ManifestsDeleted: 1, Chunks: 4, ChunksDeleted: 1, BytesDeleted: int64(len("only gone"))}, res)
	ok, _, err := s.exists(ctx, s.key(chunkKeyPart(sum([]byte("only gone")))))
	require.NoError(t, err)
	assert.False(t, ok)
	checkInvariant(t, s)
	for _, name := range []string{"keep", "fork"} {
		r, err := s.Resume(ctx, name)
		require.NoError(t, err)
		_, err = r.Tree(ctx, "/memory", memfs.Options{})
		require.NoError(t, err, "%s resumes after the collection", name)
	}
}

// TestGCRacesPush: a collection never deletes a chunk a concurrent push
// is about to name. The content of a deleted workspace is garbage when a
// collection lists the store; a push of the same content starts before
// the collection deletes it. Either the push waits for the collection
// (and uploads again what it deleted), or the collection refuses to run
// while the push does.
func TestGCRacesPush(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	setup := openObjects(t, srv, "p")
	content := map[string][]byte{"x": bytes.Repeat([]byte("reused"), 5000)}
	pushMem(t, setup, "old", content)
	require.NoError(t, setup.DeleteWorkspace(ctx, "old"))

	t.Run("push starts during a collection", func(t *testing.T) {
		gcs, pusher := openObjects(t, srv, "p"), openObjects(t, srv, "p")
		listed := make(chan struct{})
		proceed := make(chan struct{})
		gcDone := make(chan struct{})
		gcs.hooks = func(p string) {
			if p == "gc:listed" {
				close(listed)
				select { // until the push reaches its manifest, or a while
				case <-proceed:
				case <-time.After(2 * time.Second):
				}
			}
		}
		pusher.hooks = func(p string) {
			if p == "push:chunks" {
				select {
				case <-proceed:
				default:
					close(proceed)
				}
				select {
				case <-gcDone:
				case <-time.After(5 * time.Second):
				}
			}
		}
		var gcRes GCResult
		var gcErr error
		go func() {
			defer close(gcDone)
			gcRes, gcErr = gcs.GC(ctx, GCOptions{Grace: -1, Holder: "collector"})
		}()
		<-listed
		e, res := pushMem(t, pusher, "new", content)
		<-gcDone
		require.NoError(t, gcErr)
		assert.Equal(t, 1, gcRes.ChunksDeleted, "the collection deleted the old workspace's chunk")
		assert.Equal(t, 1, res.Uploaded, "the push sent again what the collection deleted")
		checkInvariant(t, pusher)
		r, err := pusher.Resume(ctx, "new")
		require.NoError(t, err)
		got, err := r.Tree(ctx, "/memory", memfs.Options{})
		require.NoError(t, err)
		want, err := mounts.ReadFile(ctx, e.mem, "x")
		require.NoError(t, err)
		b, err := mounts.ReadFile(ctx, got, "x")
		require.NoError(t, err)
		assert.Equal(t, want, b)
	})

	t.Run("collection starts during a push", func(t *testing.T) {
		gcs, pusher := openObjects(t, srv, "p"), openObjects(t, srv, "p")
		require.NoError(t, pusher.DeleteWorkspace(ctx, "new"))
		at := make(chan struct{})
		release := make(chan struct{})
		pusher.hooks = func(p string) {
			if p == "push:chunks" {
				close(at)
				<-release
			}
		}
		done := make(chan error)
		e := newWS(t)
		go func() {
			err := mounts.WriteFile(ctx, e.mem, "x", content["x"], 0o644)
			var c checkpoint.Info
			if err == nil {
				c, err = e.ws.Create(ctx, "")
			}
			if err == nil {
				var ss *Session
				if ss, err = pusher.Acquire(ctx, "newer", AcquireOptions{Holder: "pusher"}); err == nil {
					_, err = ss.Push(ctx, e.ws, c.ID, PushOptions{})
				}
			}
			done <- err
		}()
		<-at
		_, err := gcs.GC(ctx, GCOptions{Grace: -1, Holder: "collector"})
		require.ErrorIs(t, err, ErrBusy)
		assert.ErrorContains(t, err, "push by pusher")
		close(release)
		require.NoError(t, <-done)
		checkInvariant(t, gcs)
		res, err := gcs.GC(ctx, GCOptions{Grace: -1})
		require.NoError(t, err, "once the push is done")
		assert.Equal(t, 0, res.ChunksDeleted, "the pushed chunk is named")
		checkInvariant(t, gcs)
	})
}
