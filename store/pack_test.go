package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
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

// countingClient counts the requests a store makes, by method and by the
// kind of object (chunks, packs, manifests ...).
type countingClient struct {
	inner  *http.Client
	counts requestCounts
}

type requestCounts struct {
	puts, heads, packPuts, chunkPuts, gets atomic.Int32
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	switch {
	case r.Method == http.MethodHead:
		c.counts.heads.Add(1)
	case r.Method == http.MethodGet:
		c.counts.gets.Add(1)
	case r.Method == http.MethodPut:
		c.counts.puts.Add(1)
		if strings.Contains(r.URL.Path, "/packs/") {
			c.counts.packPuts.Add(1)
		}
		if strings.Contains(r.URL.Path, "/chunks/") {
			c.counts.chunkPuts.Add(1)
		}
	}
	return c.inner.Do(r)
}

// TestPacks: a push of many small files sends them in a few packs, not as
// an object and a HEAD each; they come back whole and lazily, each
// checked by its hash; a second checkpoint sends only what changed and
// names the packs it keeps; a fork shares them; gc keeps a pack while a
// kept manifest names a chunk in it; a byte altered in a pack is EIO for
// that file alone, naming the pack.
func TestPacks(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	cc := &countingClient{inner: &http.Client{}}
	s, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 3,
		ChunkSize: 64 << 10, PackBelow: 32 << 10, PackSize: 64 << 10, HTTPClient: cc})
	require.NoError(t, err)
	e := newWS(t)
	const n = 300
	for d := range 7 {
		require.NoError(t, mounts.Mkdir(ctx, e.mem, fmt.Sprintf("d%d", d), 0o755))
	}
	for i := range n {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, fmt.Sprintf("d%d/f%03d", i%7, i), bytes.Repeat([]byte(fmt.Sprintf("file %d\n", i)), 100), 0o644))
	}
	fill(t, e.mem) // a 320000-byte file: 5 chunks of 64 KiB, objects of their own
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	ss := acquire(t, s, "w", "a")
	before := cc.counts.puts.Load()
	res, err := ss.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	packs, chunks := cc.counts.packPuts.Load(), cc.counts.chunkPuts.Load()
	t.Logf("first push: %d requests, %d packs, %d chunk objects, %d HEADs; %+v", cc.counts.puts.Load()-before, packs, chunks, cc.counts.heads.Load(), res)
	assert.LessOrEqual(t, packs, int32(6), "300 files of ~800 B in packs of 64 KiB")
	assert.Equal(t, int32(3), chunks, "only big.bin's chunks are objects: 3 distinct of 64 KiB")
	assert.LessOrEqual(t, cc.counts.heads.Load(), int32(10), "no HEAD a small chunk")
	checkInvariant(t, s)

	// Back whole, and lazily, with an empty cache.
	s2 := openSmall(t, srv, "p")
	r, err := s2.Resume(ctx, "w")
	require.NoError(t, err)
	whole, err := r.Tree(ctx, "/memory", memfs.Options{})
	require.NoError(t, err)
	lazy, err := r.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	for _, name := range []string{"d3/f010", "d0/f294", "notes.md", "a/big.bin"} {
		want, err := mounts.ReadFile(ctx, e.mem, name)
		require.NoError(t, err)
		for _, tree := range []mounts.FS{whole, lazy} {
			got, err := mounts.ReadFile(ctx, tree, name)
			require.NoError(t, err)
			assert.Equal(t, want, got, name)
		}
	}

	// The second checkpoint: one file changed, one added. One small pack.
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "d3/f010", []byte("changed\n"), 0o644))
	require.NoError(t, mounts.WriteFile(ctx, e.mem, "new", []byte("new\n"), 0o644))
	c2, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	p0 := cc.counts.packPuts.Load()
	res, err = ss.Push(ctx, e.ws, c2.ID, PushOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), cc.counts.packPuts.Load()-p0, "one pack for what changed")
	assert.Equal(t, 2, res.Uploaded)
	r2, err := s2.Resume(ctx, "w@2")
	require.NoError(t, err)
	assert.Greater(t, len(r2.Manifest.Packs), 1, "the first push's packs are named again")
	tree2, err := r2.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	for name, want := range map[string]string{"d3/f010": "changed\n", "new": "new\n", "d0/f007": strings.Repeat("file 7\n", 100)} {
		got, err := mounts.ReadFile(ctx, tree2, name)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), name)
	}

	// gc: a fork of @1 keeps its packs after the workspace is gone.
	_, err = s.Fork(ctx, "w@1", "fork")
	require.NoError(t, err)
	require.NoError(t, ss.Release(ctx))
	require.NoError(t, s.DeleteWorkspace(ctx, "w"))
	g, err := s.GC(ctx, GCOptions{Grace: -1})
	require.NoError(t, err)
	assert.Equal(t, 1, g.PacksDeleted, "only the second push's pack")
	assert.Equal(t, int(packs), g.Packs-1)
	checkInvariant(t, s)

	// A byte altered in a pack: that file is EIO naming the pack, whole
	// or lazily; the others read.
	rf, err := s.Resume(ctx, "fork")
	require.NoError(t, err)
	h := sum(bytes.Repeat([]byte("file 42\n"), 100))
	l, ok := rf.packs[h]
	require.True(t, ok)
	path := srv.ObjectPath(testBucket, "p/"+packKeyPart(l.pack))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("X"), l.off+3)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s3 := openSmall(t, srv, "p")
	rc, err := s3.Resume(ctx, "fork")
	require.NoError(t, err)
	_, err = rc.Tree(ctx, "/memory", memfs.Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, packKeyPart(l.pack))
	lz, err := rc.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	_, err = mounts.ReadFile(ctx, lz, "d0/f042")
	require.ErrorIs(t, err, syscall.EIO)
	got, err := mounts.ReadFile(ctx, lz, "d1/f043")
	require.NoError(t, err, "the pack's other chunks read")
	assert.Equal(t, strings.Repeat("file 43\n", 100), string(got))
}

// TestPackPutFails: a pack that cannot be written fails the push; no
// manifest names its chunks; the push again completes.
func TestPackPutFails(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	var fail atomic.Bool
	fail.Store(true)
	fc := &faultClient{inner: &http.Client{}, before: func(r *http.Request) *http.Response {
		if !fail.Load() || r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/packs/") {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
		return &http.Response{StatusCode: 500, Status: "500", Header: http.Header{"Content-Type": {"application/xml"}},
			Body: io.NopCloser(strings.NewReader("<Error><Code>InternalError</Code></Error>")), Request: r}
	}}
	s, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 2,
		MaxBackoff: 10 * time.Millisecond, HTTPClient: fc})
	require.NoError(t, err)
	e := newWS(t)
	fill(t, e.mem)
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	ss := acquire(t, s, "w", "a")
	_, err = ss.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.Error(t, err)
	checkInvariant(t, s)
	_, err = s.Head(ctx, "w")
	assert.ErrorIs(t, err, ErrNotFound, "no head for a push that failed")
	fail.Store(false)
	_, err = ss.Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)
	checkInvariant(t, s)
}

// TestWarmPacks: a resume's packs fetched whole, one GET each; the lazy
// tree's small files then load from the cache with no request.
func TestWarmPacks(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	for i := range 200 {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, fmt.Sprintf("f%03d", i), bytes.Repeat([]byte(fmt.Sprintf("note %d\n", i)), 50), 0o644))
	}
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = acquire(t, s, "w", "a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)

	cc := &countingClient{inner: &http.Client{}}
	s2, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 3,
		CacheDir: t.TempDir(), ChunkSize: 64 << 10, HTTPClient: cc})
	require.NoError(t, err)
	r, err := s2.Resume(ctx, "w")
	require.NoError(t, err)
	require.NotEmpty(t, r.Manifest.Packs)
	g0 := cc.counts.gets.Load()
	require.NoError(t, r.WarmPacks(ctx, "/memory"))
	assert.Equal(t, int32(len(r.Manifest.Packs)), cc.counts.gets.Load()-g0, "one GET a pack")
	lazy, err := r.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	g1 := cc.counts.gets.Load()
	for i := range 200 {
		b, err := mounts.ReadFile(ctx, lazy, fmt.Sprintf("f%03d", i))
		require.NoError(t, err)
		require.Equal(t, strings.Repeat(fmt.Sprintf("note %d\n", i), 50), string(b))
	}
	assert.Zero(t, cc.counts.gets.Load()-g1, "every small file from the cache")
}

// TestWarmPacksWaitedFor: a small file read while its pack is being
// fetched whole waits for that fetch rather than asking for its chunk.
func TestWarmPacksWaitedFor(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t, testBucket)
	s := openSmall(t, srv, "p")
	e := newWS(t)
	for i := range 50 {
		require.NoError(t, mounts.WriteFile(ctx, e.mem, fmt.Sprintf("f%03d", i), []byte(fmt.Sprintf("note %d\n", i)), 0o644))
	}
	c1, err := e.ws.Create(ctx, "")
	require.NoError(t, err)
	_, err = acquire(t, s, "w", "a").Push(ctx, e.ws, c1.ID, PushOptions{})
	require.NoError(t, err)

	var ranged atomic.Int32
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fc := &faultClient{inner: &http.Client{}, before: func(r *http.Request) *http.Response {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/packs/") {
			if r.Header.Get("Range") != "" {
				ranged.Add(1)
				return nil
			}
			once.Do(func() { close(inFlight) })
			<-release
		}
		return nil
	}}
	s2, err := Open(ctx, Config{URL: "s3://" + testBucket + "/p", Endpoint: srv.Endpoint, MaxAttempts: 3,
		CacheDir: t.TempDir(), ChunkSize: 64 << 10, HTTPClient: fc})
	require.NoError(t, err)
	waits := make(chan struct{}, 1)
	s2.hooks = func(p string) {
		if p == "get:waits-for-pack" {
			waits <- struct{}{}
		}
	}
	r, err := s2.Resume(ctx, "w")
	require.NoError(t, err)
	lazy, err := r.LazyTree("/memory", memfs.Options{})
	require.NoError(t, err)
	warmed := make(chan error, 1)
	go func() { warmed <- r.WarmPacks(ctx, "/memory") }()
	<-inFlight
	read := make(chan string, 1)
	go func() {
		b, err := mounts.ReadFile(ctx, lazy, "f007")
		if err != nil {
			read <- err.Error()
			return
		}
		read <- string(b)
	}()
	select {
	case <-waits:
	case got := <-read:
		t.Fatalf("the read did not wait for the pack in flight: %q, %d ranged GETs", got, ranged.Load())
	}
	close(release)
	require.NoError(t, <-warmed)
	assert.Equal(t, "note 7\n", <-read)
	assert.Zero(t, ranged.Load(), "no chunk asked for on its own")
}
