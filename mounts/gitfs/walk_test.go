package gitfs

import (
	"context"
	"github.com/go-git/go-git/v5/plumbing"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
	"github.com/vfsmount/vfsmount/mounts/readpattern"
)

// pages collects what a walker offers.
type pages struct {
	mu  sync.Mutex
	got map[string]string
	n   int
}

func (p *pages) sink(name string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got[name] = string(data)
	p.n++
}

func (p *pages) take() (map[string]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	got, n := p.got, p.n
	p.got, p.n = map[string]string{}, 0
	return got, n
}

// fakeClock is moved by the test; the walker's detector reads it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestAScanOffersItsPages: the files after the one that starts a scan of a
// directory, and the files of directories listed during it, are offered
// whole to the page sink, small ones only; a listing alone offers nothing;
// a later scan offers again what an earlier one did (the kernel may have
// dropped it), once per scan.
func TestAScanOffersItsPages(t *testing.T) {
	huge := strings.Repeat("h", int(readpattern.Default.FileMax)+1)
	dir, _ := gittest.SmallRepo(t, map[string]string{
		"d/a": "alpha", "d/b": "bravo", "d/c": "charlie", "d/e": "echo", "d/huge": huge,
		"n/1": "one", "n/2": "two",
	})
	f := openFS(t, Options{Src: dir})
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f.walk.det = readpattern.New(readpattern.Default, clock.now) // before any work is queued
	p := &pages{got: map[string]string{}}
	require.True(t, mounts.OfferPages(f, p.sink))
	ctx := context.Background()
	read := func(name string) {
		t.Helper()
		_, err := mounts.ReadFile(ctx, f, name)
		require.NoError(t, err)
	}
	// settled waits until the walker has nothing queued or in hand, and
	// checks it offered n pages in all.
	settled := func(n int64) {
		t.Helper()
		require.Eventually(t, func() bool {
			f.walk.mu.Lock()
			defer f.walk.mu.Unlock()
			return len(f.walk.stack) == 0 && f.walk.active == 0
		}, 10*time.Second, time.Millisecond, "the walker settles")
		assert.Equal(t, n, f.walk.offered.Load())
	}

	// Listing alone is no scan.
	_, _, err := f.StatDir(ctx, "n")
	require.NoError(t, err)
	read("d/a")
	settled(0)
	got, _ := p.take()
	assert.Empty(t, got, "a listing and one file read offer nothing")

	read("d/b") // a scan of d: what follows b is offered, huge is not
	settled(2)
	got, _ = p.take()
	assert.Equal(t, map[string]string{"d/c": "charlie", "d/e": "echo"}, got)

	_, _, err = f.StatDir(ctx, "n") // listed during the scan
	require.NoError(t, err)
	settled(4)
	got, _ = p.take()
	assert.Equal(t, map[string]string{"n/1": "one", "n/2": "two"}, got)
	_, _, err = f.StatDir(ctx, "n")
	require.NoError(t, err)
	settled(4) // offered once per scan

	// The window closes; a new scan offers n again when it is listed.
	clock.advance(readpattern.Default.Window)
	read("d/a")
	read("d/b")
	_, _, err = f.StatDir(ctx, "n")
	require.NoError(t, err)
	settled(8)
	got, _ = p.take()
	assert.Equal(t, map[string]string{"d/c": "charlie", "d/e": "echo", "n/1": "one", "n/2": "two"}, got,
		"offered once per reading")

	require.True(t, mounts.OfferPages(f, nil))
	clock.advance(readpattern.Default.Window)
	read("n/1")
	read("n/2")
	settled(8) // no sink, no offers
}

// Content offered whole to the page sink is not kept decoded; without a
// sink what is decoded ahead stays for the read that follows.
func TestOfferedPagesAreNotKeptDecoded(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{"a": "alpha", "b": "bravo"})
	f := openFS(t, Options{Src: dir})
	ctx := context.Background()
	na, err := f.resolve(ctx, "open", "a")
	require.NoError(t, err)
	nb, err := f.resolve(ctx, "open", "b")
	require.NoError(t, err)
	cached := func(h plumbing.Hash) bool {
		b, err := f.blobs.pin(h)
		require.NoError(t, err)
		if b != nil {
			f.blobs.release(b)
		}
		return b != nil
	}
	buf := make([]byte, 64)

	f.walk.ahead("a", na.hash, buf, true) // no sink yet
	assert.True(t, cached(na.hash), "decoded ahead, not offered: kept for the read")

	p := &pages{got: map[string]string{}}
	require.True(t, mounts.OfferPages(f, p.sink))
	f.walk.ahead("a", na.hash, buf, true)
	f.walk.ahead("b", nb.hash, buf, true)
	got, _ := p.take()
	assert.Equal(t, map[string]string{"a": "alpha", "b": "bravo"}, got)
	assert.False(t, cached(na.hash), "offered: the page cache has it")
	assert.False(t, cached(nb.hash))

	f.walk.ahead("b", nb.hash, buf, false)
	assert.True(t, cached(nb.hash), "decoded, to be offered later: kept")
}

// A scan the reader drives itself (mounts.OpenOptions.Scan: the tool
// face's grep, with workers of its own) is counted, so that the index
// build keeps out of its way, but not read ahead of: nothing is decoded
// or offered for it.
func TestAScanOfItsOwnIsNotReadAhead(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, map[string]string{"d/a": "alpha", "d/b": "bravo", "d/c": "charlie", "d/e": "echo"})
	f := openFS(t, Options{Src: dir})
	// A clock that stands still: the scan is on however slow the run.
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f.walk.det = readpattern.New(readpattern.Default, clock.now)
	p := &pages{got: map[string]string{}}
	require.True(t, mounts.OfferPages(f, p.sink))
	ctx := context.Background()
	for _, name := range []string{"d/a", "d/b"} {
		fl, err := mounts.OpenWith(ctx, f, name, mounts.OpenOptions{Scan: true})
		require.NoError(t, err)
		require.NoError(t, fl.Close())
	}
	assert.True(t, f.walk.scanning(), "a scan is on")
	f.walk.mu.Lock()
	queued := len(f.walk.stack) + f.walk.active
	f.walk.mu.Unlock()
	assert.Zero(t, queued, "nothing queued")
	assert.Zero(t, f.walk.decoded.Load())
	assert.Zero(t, f.walk.offered.Load())
}
