package store

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// cache keeps chunks in a local directory, one file per chunk named by its
// hash, within a bound on their total size: the least recently used go
// first. A file is checked against its name when read (a torn or altered
// one is dropped and fetched again).
type cache struct {
	dir   string
	limit int64

	mu    sync.Mutex
	size  int64
	items map[string]*cacheItem
}

type cacheItem struct {
	size int64
	used time.Time
}

func newCache(dir string, limit int64) (*cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &cache{dir: dir, limit: limit, items: map[string]*cacheItem{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || len(e.Name()) != 64 {
			continue // a temporary file of a crashed put, or not ours
		}
		c.items[e.Name()] = &cacheItem{size: fi.Size(), used: fi.ModTime()}
		c.size += fi.Size()
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func (c *cache) get(h string) ([]byte, bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, h))
	if err != nil {
		return nil, false
	}
	s := sha256.Sum256(data)
	if hex.EncodeToString(s[:]) != h {
		c.drop(h)
		return nil, false
	}
	c.mu.Lock()
	if it := c.items[h]; it != nil {
		it.used = time.Now()
	}
	c.mu.Unlock()
	return data, true
}

func (c *cache) put(h string, data []byte) {
	if int64(len(data)) > c.limit {
		return
	}
	f, err := os.CreateTemp(c.dir, "put-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.dir, h))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.items[h]; it != nil {
		c.size -= it.size
	}
	c.items[h] = &cacheItem{size: int64(len(data)), used: time.Now()}
	c.size += int64(len(data))
	c.evictLocked()
}

func (c *cache) drop(h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.items[h]; it != nil {
		c.size -= it.size
		delete(c.items, h)
	}
	os.Remove(filepath.Join(c.dir, h))
}

// evictLocked removes the least recently used chunks past the bound.
func (c *cache) evictLocked() {
	if c.size <= c.limit {
		return
	}
	keys := make([]string, 0, len(c.items))
	for k := range c.items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.items[a].used.Compare(c.items[b].used) })
	for _, k := range keys {
		if c.size <= c.limit {
			return
		}
		c.size -= c.items[k].size
		delete(c.items, k)
		os.Remove(filepath.Join(c.dir, k))
	}
}

// bytes is the size the cache holds.
func (c *cache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
