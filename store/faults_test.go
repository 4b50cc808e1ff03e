package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/internal/testutil"
	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

// faultClient carries requests, and lets a test act on them first.
type faultClient struct {
	inner  *http.Client
	before func(r *http.Request) *http.Response // non-nil: answered so
}

func (c *faultClient) Do(r *http.Request) (*http.Response, error) {
	if c.before != nil {
		if resp := c.before(r); resp != nil {
			return resp, nil
		}
	}
	return c.inner.Do(r)
}

func isChunkPut(r *http.Request) bool {
	return r.Method == http.MethodPut && (strings.Contains(r.URL.Path, "/chunks/") || strings.Contains(r.URL.Path, "/packs/"))
}

// checkInvariant: every manifest in the store names only chunks that are
// there (as objects, or in the packs it says, with their bytes), and every
// head names only manifests that are there.
func checkInvariant(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	ms, err := s.list(ctx, "manifests")
	require.NoError(t, err)
	for _, o := range ms {
		m, err := s.Manifest(ctx, strings.TrimPrefix(o.key, "manifests/"))
		require.NoError(t, err)
		loc := m.packIndex()
		for h := range m.chunks() {
			if l, ok := loc[h]; ok {
				data, err := s.getPacked(ctx, h, l)
				assert.NoError(t, err, "manifest %s names chunk %s in pack %s, which is not there", o.key, h, l.pack)
				assert.Equal(t, h, sum(data))
				continue
			}
			ok, _, err := s.exists(ctx, s.key(chunkKeyPart(h)))
			require.NoError(t, err)
			assert.True(t, ok, "manifest %s names chunk %s, which is not there", o.key, h)
		}
	}
	names, err := s.Workspaces(ctx)
	require.NoError(t, err)
	for _, n := range names {
		h, err := s.Head(ctx, n)
		require.NoError(t, err)
		for _, r := range h.Checkpoints {
			ok, _, err := s.exists(ctx, s.key(manifestKeyPart(r.Manifest)))
			require.NoError(t, err)
			assert.True(t, ok, "head of %s names manifest %s, which is not there", n, r.Manifest)
		}
	}
}

// TestServerKilledMidPush: the server dies while a push sends chunks; the
// push fails, nothing half-made is visible (no head, no manifest without
// its chunks); once the server is back, pushing again completes it and the
// checkpoint resumes whole.
func TestServerKilledMidPush(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	var puts atomic.Int32
	var once sync.Once
	fc := &faultClient{inner: &http.Client{}}
	s, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 3,
		MaxBackoff: 50 * time.Millisecond, Parallel: 4, ChunkSize: 64 << 10, PackBelow: -1, HTTPClient: fc})
	require.NoError(t, err)
	mem := memfs.New(memfs.Options{})
	for i := range 60 {
		require.NoError(t, mounts.WriteFile(ctx, mem, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte(fmt.Sprint(i)), 30000), 0o644))
	}
	e := newWS(t)
	ws := newCheckpoints(t, e.repo, mem)
	c1, err := ws.Create(ctx, "")
	require.NoError(t, err)
	ss := acquire(t, s, "killed", "node-a")

	// First the last chunk keeps failing (500, slowly): the push fails,
	// and no manifest names the chunk that is not there.
	bad := "/chunks/" + sum(bytes.Repeat([]byte("59"), 30000))
	fc.before = func(r *http.Request) *http.Response {
		if !isChunkPut(r) || !strings.HasSuffix(r.URL.Path, bad) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
		return &http.Response{StatusCode: 500, Status: "500", Header: http.Header{"Content-Type": {"application/xml"}},
			Body: io.NopCloser(strings.NewReader("<Error><Code>InternalError</Code></Error>")), Request: r}
	}
	_, err = ss.Push(ctx, ws, c1.ID, PushOptions{})
	require.Error(t, err, "a chunk could not be written")
	checkInvariant(t, s)
	_, err = s.Head(ctx, "killed")
	assert.ErrorIs(t, err, ErrNotFound, "no head for a push that failed")

	// Then the server dies in the middle of the chunks of a checkpoint
	// with more in it.
	for i := range 30 {
		require.NoError(t, mounts.WriteFile(ctx, mem, fmt.Sprintf("g%02d", i), bytes.Repeat([]byte(fmt.Sprint("g", i)), 30000), 0o644))
	}
	c1, err = ws.Create(ctx, "")
	require.NoError(t, err)
	fc.before = func(r *http.Request) *http.Response {
		if isChunkPut(r) && puts.Add(1) == 10 {
			once.Do(srv.Stop)
		}
		return nil
	}
	_, err = ss.Push(ctx, ws, c1.ID, PushOptions{})
	require.Error(t, err, "the server was killed mid-push")
	assert.ErrorIs(t, err, ErrUnreachable)
	t.Logf("push with the server killed: %v", err)

	srv.Start()
	fc.before = nil
	_, err = s.Head(ctx, "killed")
	assert.ErrorIs(t, err, ErrNotFound, "no head for a push that failed")
	checkInvariant(t, s)
	ms, err := s.list(ctx, "manifests")
	require.NoError(t, err)
	assert.Empty(t, ms, "no manifest for the pushes that failed")

	res, err := ss.Push(ctx, ws, c1.ID, PushOptions{})
	require.NoError(t, err, "pushed again once the server is back")
	assert.Less(t, res.Uploaded, res.Chunks, "what the first try sent is not sent again")
	checkInvariant(t, s)
	r, err := s.Resume(ctx, "killed")
	require.NoError(t, err)
	got, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.NoError(t, err)
	want, err := mem.CheckpointView(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, describeTree(t, want), describeTree(t, got))
}

// TestThrottledAndFailing: 503 SlowDown and 500 answers are retried with
// backoff; the push completes.
func TestThrottledAndFailing(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	var n, faults atomic.Int32
	fc := &faultClient{inner: &http.Client{}}
	fc.before = func(r *http.Request) *http.Response {
		if r.Method != http.MethodPut || n.Add(1)%3 != 1 {
			return nil
		}
		faults.Add(1)
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		code, body := http.StatusServiceUnavailable, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
		if faults.Load()%2 == 0 {
			code, body = http.StatusInternalServerError, "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"
		}
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{"Content-Type": {"application/xml"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	s, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 4,
		MaxBackoff: 20 * time.Millisecond, ChunkSize: 64 << 10, PackBelow: -1, HTTPClient: fc})
	require.NoError(t, err)
	e := newWS(t)
	fill(t, e.mem)
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = acquire(t, s, "throttled", "node-a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	assert.Greater(t, faults.Load(), int32(3), "the server answered 503/500 several times")
	checkInvariant(t, s)
}

// TestCorruptChunkAtResume: a chunk altered in the bucket fails the
// resume with an error naming it; no tree with wrong bytes comes back.
func TestCorruptChunkAtResume(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openObjects(t, srv, "p")
	e := newWS(t)
	fill(t, e.mem)
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = acquire(t, s, "w", "a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	h := sum([]byte("# notes\n"))
	require.NoError(t, os.WriteFile(srv.ObjectPath(testBucket, "p/chunks/"+h), []byte("# NOTES\n"), 0o644))
	s2 := openObjects(t, srv, "p") // an empty cache
	r, err := s2.Resume(ctx, "w")
	require.NoError(t, err)
	got, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "p/chunks/"+h)
	assert.Nil(t, got)

	// Lazily: the tree comes back; reading that file is EIO naming the
	// chunk, never its wrong bytes; the other files read.
	lazy, err := r.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	b, err := mounts.ReadFile(ctx, lazy, "notes.md")
	require.ErrorIs(t, err, syscall.EIO)
	assert.ErrorContains(t, err, "p/chunks/"+h)
	assert.Nil(t, b)
	_, err = mounts.ReadFile(ctx, lazy, "a/big.bin")
	assert.NoError(t, err)
}

// TestCacheBounded: the chunk cache keeps within its bound, dropping the
// least recently used; a cached chunk altered on disk is not believed.
func TestCacheBounded(t *testing.T) {
	dir := t.TempDir()
	c, err := newCache(dir, 3000)
	require.NoError(t, err)
	var hs []string
	for i := range 5 {
		b := bytes.Repeat([]byte{byte(i)}, 1000)
		h := sum(b)
		hs = append(hs, h)
		c.put(h, b)
		if i == 1 {
			_, ok := c.get(hs[0]) // used: kept over hs[1]
			require.True(t, ok)
		}
	}
	assert.LessOrEqual(t, c.bytes(), int64(3000))
	_, ok := c.get(hs[1])
	assert.False(t, ok, "the least recently used went first")
	_, ok = c.get(hs[4])
	assert.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(dir, hs[4]), []byte("altered"), 0o600))
	_, ok = c.get(hs[4])
	assert.False(t, ok, "an altered cache file is not believed")
}
