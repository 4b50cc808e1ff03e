package gitfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// staticLoader serves content and counts its calls.
type staticLoader struct {
	mu      sync.Mutex
	content map[plumbing.Hash][]byte
	calls   int
	err     error
	gate    chan struct{} // when non-nil, loads wait for it
}

func (l *staticLoader) load(h plumbing.Hash) loader {
	return func(ctx context.Context) (io.ReadCloser, int64, error) {
		l.mu.Lock()
		l.calls++
		err, c, gate := l.err, l.content[h], l.gate
		l.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if err != nil {
			return nil, 0, err
		}
		return io.NopCloser(bytes.NewReader(c)), int64(len(c)), nil
	}
}

func hashOf(b byte) plumbing.Hash { return plumbing.Hash{b} }

func readAll(t *testing.T, b *blob) []byte {
	t.Helper()
	buf := make([]byte, b.size+1)
	n, err := b.readAt(buf, 0)
	require.ErrorIs(t, err, io.EOF)
	return buf[:n]
}

func TestBlobCacheEvictsLeastRecentlyUsedUnpinned(t *testing.T) {
	l := &staticLoader{content: map[plumbing.Hash][]byte{
		hashOf(1): bytes.Repeat([]byte{1}, 40),
		hashOf(2): bytes.Repeat([]byte{2}, 40),
		hashOf(3): bytes.Repeat([]byte{3}, 40),
	}}
	c := newBlobCache(100, 1<<30, "", nil)
	ctx := context.Background()
	get := func(b byte) *blob {
		e, err := c.acquire(ctx, hashOf(b), l.load(hashOf(b)))
		require.NoError(t, err)
		assert.Equal(t, l.content[hashOf(b)], readAll(t, e))
		return e
	}
	c.release(get(1))
	c.release(get(2))
	c.release(get(1)) // 1 is now the most recent
	assert.Equal(t, 2, l.calls, "a hit does not load")
	c.release(get(3)) // 120 > 100: evicts 2, the least recent
	assert.Equal(t, 3, l.calls)
	assert.Equal(t, int64(80), c.entries.Cost())
	c.release(get(1))
	assert.Equal(t, 3, l.calls, "1 survived")
	c.release(get(2))
	assert.Equal(t, 4, l.calls, "2 was evicted")
}

func TestBlobCachePinsOpenEntries(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 300)
	l := &staticLoader{content: map[plumbing.Hash][]byte{hashOf(1): big, hashOf(2): []byte("small")}}
	c := newBlobCache(100, 1<<30, "", nil)
	ctx := context.Background()
	a, err := c.acquire(ctx, hashOf(1), l.load(hashOf(1)))
	require.NoError(t, err)
	b, err := c.acquire(ctx, hashOf(1), l.load(hashOf(1)))
	require.NoError(t, err)
	s, err := c.acquire(ctx, hashOf(2), l.load(hashOf(2)))
	require.NoError(t, err)
	c.release(s) // over budget, but the big entry is pinned twice
	c.release(a)
	assert.Equal(t, big, readAll(t, b), "still readable while one file holds it")
	assert.Equal(t, 2, l.calls)
	c.release(b)
	assert.LessOrEqual(t, c.entries.Cost(), int64(100), "released: back under the bound")
	_, ok := c.entries.Get(hashOf(1))
	assert.False(t, ok, "the oversized entry went on its last release")
}

func TestBlobCacheSpillsToUnlinkedFiles(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789"), 1000)
	l := &staticLoader{content: map[plumbing.Hash][]byte{hashOf(1): content, hashOf(2): []byte("tiny")}}
	c := newBlobCache(1<<20, 1000, dir, nil)
	ctx := context.Background()
	b, err := c.acquire(ctx, hashOf(1), l.load(hashOf(1)))
	require.NoError(t, err)
	require.NotNil(t, b.file, "past the threshold: on disk")
	assert.Nil(t, b.mem)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "spill files are unlinked")
	buf := make([]byte, 10)
	n, err := b.readAt(buf, 5005)
	require.NoError(t, err)
	assert.Equal(t, "5678901234", string(buf[:n]))
	s, err := c.acquire(ctx, hashOf(2), l.load(hashOf(2)))
	require.NoError(t, err)
	assert.Nil(t, s.file, "under the threshold: in memory")
	c.release(s)
	c.release(b)
	c.close()
	_, err = b.file.Stat()
	assert.ErrorIs(t, err, os.ErrClosed, "close drops the spill file")
	_, err = c.acquire(ctx, hashOf(1), l.load(hashOf(1)))
	assert.ErrorIs(t, err, errCacheClosed)
}

func TestBlobCacheFallsBackToMemoryWhenItCannotSpill(t *testing.T) {
	notDir := t.TempDir() + "/file"
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	var spillErrs int
	content := bytes.Repeat([]byte("y"), 5000)
	l := &staticLoader{content: map[plumbing.Hash][]byte{hashOf(1): content, hashOf(2): content[1:]}}
	c := newBlobCache(1<<20, 1000, notDir+"/spill", func(error) { spillErrs++ })
	for _, h := range []plumbing.Hash{hashOf(1), hashOf(2)} {
		b, err := c.acquire(context.Background(), h, l.load(h))
		require.NoError(t, err)
		assert.Equal(t, l.content[h], readAll(t, b))
		c.release(b)
	}
	assert.Equal(t, 1, spillErrs, "reported once")
}

func TestBlobCacheSharesOneLoadAndForgetsFailures(t *testing.T) {
	l := &staticLoader{content: map[plumbing.Hash][]byte{hashOf(1): []byte("shared")}, gate: make(chan struct{})}
	c := newBlobCache(1<<20, 1<<30, "", nil)
	var wg sync.WaitGroup
	got := make([]*blob, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := c.acquire(context.Background(), hashOf(1), l.load(hashOf(1)))
			if assert.NoError(t, err) {
				got[i] = b
			}
		}()
	}
	// Every acquire waits, in the load or on it, before the load ends.
	acquire := "gitfs.(*blobCache).acquire"
	require.Eventually(t, func() bool {
		return gittest.Waiting("chan receive", acquire) == 1 && gittest.Waiting("sync.WaitGroup.Wait", acquire) == len(got)-1
	}, 10*time.Second, time.Millisecond, "the acquires wait together")
	close(l.gate)
	wg.Wait()
	assert.Equal(t, 1, l.calls, "eight concurrent opens, one decode")
	for _, b := range got {
		require.NotNil(t, b)
		assert.Same(t, got[0], b)
		c.release(b)
	}

	boom := errors.New("corrupt")
	l2 := &staticLoader{err: boom}
	_, err := c.acquire(context.Background(), hashOf(9), l2.load(hashOf(9)))
	assert.ErrorIs(t, err, boom)
	l2.err = nil
	l2.content = map[plumbing.Hash][]byte{hashOf(9): []byte("ok")}
	b, err := c.acquire(context.Background(), hashOf(9), l2.load(hashOf(9)))
	require.NoError(t, err, "a failure is not cached")
	c.release(b)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.acquire(ctx, hashOf(10), (&staticLoader{content: map[plumbing.Hash][]byte{hashOf(10): bytes.Repeat([]byte("z"), 10)}}).load(hashOf(10)))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestBlobCacheRejectsContentOfTheWrongSize(t *testing.T) {
	c := newBlobCache(1<<20, 1<<30, "", nil)
	for _, tc := range []struct {
		name    string
		content string
		size    int64
	}{
		{"longer than the header", "abcdef", 3},
		{"shorter than the header", "ab", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.acquire(context.Background(), hashOf(byte(tc.size)+byte(len(tc.content))), func(context.Context) (io.ReadCloser, int64, error) {
				return io.NopCloser(bytes.NewReader([]byte(tc.content))), tc.size, nil
			})
			assert.Error(t, err)
		})
	}
}

// gatedReader returns its content once gate is closed.
type gatedReader struct {
	gate chan struct{}
	r    io.Reader
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

func TestBlobCacheWaiterThatGivesUpKeepsNoPin(t *testing.T) {
	c := newBlobCache(1<<20, 1<<30, "", nil)
	gate := make(chan struct{})
	content := []byte("decoded while a waiter gave up")
	load := func(context.Context) (io.ReadCloser, int64, error) {
		return io.NopCloser(&gatedReader{gate: gate, r: bytes.NewReader(content)}), int64(len(content)), nil
	}
	loaded := make(chan *blob, 1)
	go func() {
		b, err := c.acquire(context.Background(), hashOf(1), load)
		assert.NoError(t, err)
		loaded <- b
	}()
	require.Eventually(t, func() bool { return gittest.Waiting("chan receive", "gitfs.(*gatedReader).Read") == 1 },
		10*time.Second, time.Millisecond, "the first acquire loads")
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := c.acquire(ctx, hashOf(1), load)
		left <- err
	}()
	require.Eventually(t, func() bool { return gittest.Waiting("sync.WaitGroup.Wait", "gitfs.(*blobCache).acquire") == 1 },
		10*time.Second, time.Millisecond, "the second waits on its load")

	// The waiter's context ends: it is told so when the load ends, and
	// the load goes on for the acquire that started it.
	cancel()
	close(gate)
	assert.ErrorIs(t, <-left, context.Canceled)
	b := <-loaded
	require.NotNil(t, b)
	assert.Equal(t, content, readAll(t, b))
	assert.Equal(t, int64(1), c.loads.Load(), "one load")
	c.release(b)

	// The waiter that left holds no pin: the entry is unpinned,
	// evictable, and a hit.
	c.mu.Lock()
	e, ok := c.entries.Get(hashOf(1))
	require.True(t, ok)
	assert.Same(t, b, e)
	assert.Zero(t, e.refs, "no pin is left behind")
	c.mu.Unlock()
	b, err := c.acquire(context.Background(), hashOf(1), load)
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.loads.Load(), "a hit")
	c.release(b)
}

// BenchmarkBlobCache measures an acquire and release of a blob in memory:
// a miss (a load of 4 KiB, an eviction) and a hit.
func BenchmarkBlobCache(b *testing.B) {
	content := bytes.Repeat([]byte("x"), 4096)
	load := func(context.Context) (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(content)), int64(len(content)), nil
	}
	ctx := context.Background()
	b.Run("miss", func(b *testing.B) {
		c := newBlobCache(64<<10, 1<<30, "", nil)
		var h plumbing.Hash
		for i := range b.N {
			binary.BigEndian.PutUint64(h[:], uint64(i))
			e, err := c.acquire(ctx, h, load)
			if err != nil {
				b.Fatal(err)
			}
			c.release(e)
		}
	})
	b.Run("hit", func(b *testing.B) {
		c := newBlobCache(64<<10, 1<<30, "", nil)
		e, err := c.acquire(ctx, hashOf(1), load)
		require.NoError(b, err)
		c.release(e)
		for range b.N {
			e, _ := c.acquire(ctx, hashOf(1), load)
			c.release(e)
		}
	})
}

func TestBlobCacheShedsWhatThePageCacheKeeps(t *testing.T) {
	l := &staticLoader{content: map[plumbing.Hash][]byte{
		hashOf(1): []byte("one"), hashOf(2): []byte("two"), hashOf(3): []byte("three"),
		hashOf(4): []byte("four"), hashOf(5): bytes.Repeat([]byte{5}, 64),
	}}
	c := newBlobCache(1<<20, 64, t.TempDir(), nil)
	ctx := context.Background()
	get := func(b byte) *blob {
		t.Helper()
		e, err := c.acquire(ctx, hashOf(b), l.load(hashOf(b)))
		require.NoError(t, err)
		return e
	}
	cached := func(b byte) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.entries.Get(hashOf(b))
		return ok
	}

	// Read whole by a reader that keeps the pages: gone at its close,
	// and the next acquire decodes again.
	c.releaseKept(get(1), true)
	assert.False(t, cached(1))
	assert.Equal(t, int64(1), c.shed.Load())
	one := get(1)
	assert.Equal(t, []byte("one"), readAll(t, one), "decoded again")
	assert.Equal(t, 2, l.calls)
	c.release(one) // an ordinary release keeps it

	// Used by a reader the kernel does not serve: kept.
	b := get(2)
	c.hold(b)
	c.releaseKept(b, true)
	assert.True(t, cached(2), "held")

	// Not read whole: kept.
	c.releaseKept(get(3), false)
	assert.True(t, cached(3), "read in part")

	// Kept while another file has it open, gone with the last.
	x, y := get(4), get(4)
	c.releaseKept(x, true)
	assert.True(t, cached(4), "still open")
	assert.Equal(t, []byte("four"), readAll(t, y), "content stays while open")
	c.releaseKept(y, true)
	assert.False(t, cached(4))

	// Spilled content is on disk, not in memory: kept.
	s := get(5)
	require.NotNil(t, s.file)
	c.releaseKept(s, true)
	assert.True(t, cached(5), "spilled")

	assert.Equal(t, int64(2), c.shed.Load())
	assert.True(t, cached(1))
	assert.Equal(t, int64(len("one")+len("two")+len("three")+64), c.entries.Cost(), "what is kept still counts toward the bound")
}
