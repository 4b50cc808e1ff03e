package gitfs

import (
	"bytes"
	"context"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/gitfs/internal/gittest"
)

// storeCache is a blob cache over the store in dir, as a mount with a
// cache directory has it: content from spillAt bytes in files.
func storeCache(t *testing.T, dir string, spillAt int64) *blobCache {
	t.Helper()
	c := newBlobCache(1<<20, spillAt, "", nil)
	c.store = newBlobStore(dir, func(err error) { t.Errorf("store: %v", err) })
	t.Cleanup(c.close)
	return c
}

func storeContent() map[plumbing.Hash][]byte {
	return map[plumbing.Hash][]byte{
		hashOf(1): []byte("small content"),
		hashOf(2): bytes.Repeat([]byte("large content "), 100), // past spillAt
		hashOf(3): {},
	}
}

// acquireAll acquires every blob of l, checks its content and releases it.
func acquireAll(t *testing.T, c *blobCache, l *staticLoader) {
	t.Helper()
	for h, want := range l.content {
		b, err := c.acquire(context.Background(), h, l.load(h))
		require.NoError(t, err)
		assert.Equal(t, want, readAll(t, b), "blob %s", h)
		c.release(b)
	}
}

func TestBlobStoreServesASecondCacheWithoutDecoding(t *testing.T) {
	dir := t.TempDir()
	first := &staticLoader{content: storeContent()}
	c1 := storeCache(t, dir, 1000)
	acquireAll(t, c1, first)
	assert.Equal(t, 3, first.calls)
	c1.close() // writes what is queued
	assert.Equal(t, int64(3), c1.store.writes.Load())

	second := &staticLoader{content: storeContent()}
	c2 := storeCache(t, dir, 1000)
	acquireAll(t, c2, second)
	assert.Equal(t, 0, second.calls, "nothing decoded")
	assert.Equal(t, int64(0), c2.loads.Load())
	assert.Equal(t, int64(3), c2.store.hits.Load())
	b, err := c2.acquire(context.Background(), hashOf(2), second.load(hashOf(2)))
	require.NoError(t, err)
	assert.NotNil(t, b.file, "large content is read from its entry's file, not the heap")
	assert.Nil(t, b.mem)
	c2.release(b)
}

// plant writes raw bytes as the store's entry of h.
func plant(t *testing.T, s *blobStore, h plumbing.Hash, raw []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(s.path(h)), 0o700))
	require.NoError(t, os.WriteFile(s.path(h), raw, 0o600))
}

func TestBlobStoreDecodesAgainOverACorruptEntry(t *testing.T) {
	content := storeContent()
	sound := func(h plumbing.Hash) []byte {
		d := content[h]
		return append(storeHeaderOf(h, crc32Of(d), int64(len(d))), d...)
	}
	cases := map[string]func(h plumbing.Hash) []byte{
		"a byte flipped": func(h plumbing.Hash) []byte {
			raw := sound(h)
			raw[len(raw)-1] ^= 0xff
			if len(content[h]) == 0 {
				raw[4] ^= 0xff // no content: the CRC itself
			}
			return raw
		},
		"cut short":        func(h plumbing.Hash) []byte { r := sound(h); return r[:len(r)-1] },
		"header cut short": func(h plumbing.Hash) []byte { return sound(h)[:storeHeader-3] },
		"empty":            func(plumbing.Hash) []byte { return nil },
		"longer":           func(h plumbing.Hash) []byte { return append(sound(h), 'x') },
		"another blob's":   func(h plumbing.Hash) []byte { return sound(hashOf(9)) },
		"size not the file's": func(h plumbing.Hash) []byte {
			d := append(bytes.Clone(content[h]), 'x')
			return append(storeHeaderOf(h, crc32Of(d), int64(len(content[h]))), d...)
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := &staticLoader{content: content}
			c := storeCache(t, dir, 1000)
			for h := range content {
				plant(t, c.store, h, corrupt(h))
			}
			acquireAll(t, c, l)
			assert.Equal(t, 3, l.calls, "every blob decoded again")
			assert.Equal(t, int64(0), c.store.hits.Load())
			assert.Equal(t, int64(3), c.store.corrupt.Load())
			c.close()

			// Replaced by sound entries: a second cache decodes nothing.
			again := &staticLoader{content: content}
			c2 := storeCache(t, dir, 1000)
			acquireAll(t, c2, again)
			assert.Equal(t, 0, again.calls)
			for h := range content {
				raw, err := os.ReadFile(c2.store.path(h))
				require.NoError(t, err)
				assert.Equal(t, sound(h), raw, "entry of %s rewritten", h)
			}
		})
	}
}

func TestBlobStoreTwoWritersAtOnce(t *testing.T) {
	dir := t.TempDir()
	content := map[plumbing.Hash][]byte{}
	for i := range 40 {
		content[hashOf(byte(i+1))] = bytes.Repeat([]byte{byte(i)}, 300+i*50) // some past spillAt
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &staticLoader{content: content}
			c := newBlobCache(1<<20, 1000, "", nil)
			c.store = newBlobStore(dir, func(err error) { t.Errorf("store: %v", err) })
			for h := range content {
				b, err := c.acquire(context.Background(), h, l.load(h))
				if err != nil {
					t.Error(err)
					continue
				}
				c.release(b)
			}
			c.close()
		}()
	}
	wg.Wait()
	// Every entry whole, no temporary file left.
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		assert.NotContains(t, d.Name(), ".tmp-", "temporary file left: %s", p)
		return nil
	}))
	assert.Equal(t, len(content), n)
	l := &staticLoader{content: content}
	c := storeCache(t, dir, 1000)
	acquireAll(t, c, l)
	assert.Equal(t, 0, l.calls)
}

// A second mount of a commit, in another daemon sharing the cache
// directory, reads what the first decoded and decodes nothing; the heap
// keeps at most storeMemSize of it.
func TestSecondMountReadsTheBlobStore(t *testing.T) {
	dir := t.TempDir()
	gittest.InitRepo(t, dir)
	gittest.WriteFile(t, dir, "a.txt", "alpha\n", 0o644)
	gittest.WriteFile(t, dir, "dir/b.txt", "beta\n", 0o644)
	gittest.WriteFile(t, dir, "big.bin", string(gittest.BigContent(3<<20)), 0o644) // past spillAt
	gittest.CommitAll(t, dir, 0, "files")
	cache := t.TempDir()
	readEvery := func(f *FS) {
		for _, name := range []string{"a.txt", "dir/b.txt", "big.bin"} {
			got, err := mounts.ReadFile(context.Background(), f, name)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			require.Equal(t, want, got, name)
		}
	}
	first := openFS(t, Options{Src: dir, CacheDir: cache, CacheSize: 1 << 20})
	readEvery(first)
	assert.Equal(t, int64(3), first.blobs.loads.Load())
	require.NoError(t, first.Close())

	second := openFS(t, Options{Src: dir, CacheDir: cache})
	readEvery(second)
	assert.Equal(t, int64(0), second.blobs.loads.Load(), "decoded nothing")
	assert.Equal(t, int64(3), second.blobs.store.hits.Load())
	big, err := second.blobs.pin(second.mustHash(t, "big.bin"))
	require.NoError(t, err)
	require.NotNil(t, big, "still cached")
	assert.NotNil(t, big.file, "large content read from its entry's file, not the heap")
	second.blobs.release(big)
}

func (f *FS) mustHash(t *testing.T, name string) plumbing.Hash {
	t.Helper()
	n, err := f.resolve(context.Background(), "test", name)
	require.NoError(t, err)
	return n.hash
}

func crc32Of(d []byte) uint32 { return crc32.Checksum(d, castagnoli) }

// A store whose disk fails writes (a full disk) costs a decode again into
// memory, never a failed read.
func TestBlobStoreWriteFailureFallsBackToMemory(t *testing.T) {
	createTemp = func(dir, pattern string) (*os.File, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		name := f.Name()
		f.Close()
		return os.Open(name) // read-only: every write fails
	}
	t.Cleanup(func() { createTemp = os.CreateTemp })
	var failures []error
	c := newBlobCache(1<<20, 1000, "", nil)
	c.store = newBlobStore(t.TempDir(), func(err error) { failures = append(failures, err) })
	t.Cleanup(c.close)
	l := &staticLoader{content: storeContent()}
	b, err := c.acquire(context.Background(), hashOf(2), l.load(hashOf(2)))
	require.NoError(t, err)
	assert.Equal(t, l.content[hashOf(2)], readAll(t, b))
	assert.Nil(t, b.file, "in memory")
	assert.Equal(t, 2, l.calls, "decoded again")
	c.release(b)
	require.Len(t, failures, 1)
	assert.Equal(t, int64(0), c.store.writes.Load())
}

// The index build stores what it decodes: a later daemon searching with
// that index reads the candidates from the tree pack, decoding nothing;
// and from the blob store when the pack cannot be written.
func TestIndexBuildFillsTheBlobStore(t *testing.T) {
	dir, _ := gittest.SmallRepo(t, searchFiles)
	for _, packed := range []bool{true, false} {
		cache := t.TempDir()
		if !packed {
			// A file where the pack's directory would be.
			require.NoError(t, os.MkdirAll(filepath.Join(cache, "blobs"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(cache, "blobs", "trees"), nil, 0o644))
		}
		f := openFS(t, Options{Src: dir, CacheDir: cache, Index: IndexEager})
		f.search.wait()
		require.Zero(t, f.blobs.loads.Load(), "the build reads objects, not the cache")
		require.NoError(t, f.Close())

		second := openFS(t, Options{Src: dir, CacheDir: cache})
		for name, want := range searchFiles {
			got, err := mounts.ReadFile(context.Background(), second, name)
			require.NoError(t, err)
			assert.Equal(t, want, string(got), name)
		}
		assert.Zero(t, second.blobs.loads.Load(), "decoded nothing")
		if packed {
			assert.NotNil(t, second.blobs.pack.Load(), "the tree pack")
			assert.Zero(t, second.blobs.store.hits.Load())
			assert.Zero(t, second.blobs.entries.Len(), "the pack's content is not cached again")
		} else {
			assert.Nil(t, second.blobs.pack.Load())
			assert.Equal(t, int64(len(searchFiles)), second.blobs.store.hits.Load())
		}
	}
}
