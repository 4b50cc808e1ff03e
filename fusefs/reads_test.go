package fusefs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsmount/vfsmount/mounts"
	"github.com/vfsmount/vfsmount/mounts/memfs"
)

func TestReaderCache(t *testing.T) {
	ctx := context.Background()
	m := memfs.New(memfs.Options{})
	fsys := &countingFS{describedFS: describedFS{m, mounts.Description{Immutable: true}}}
	names := []string{"a", "b", "c"}
	for _, n := range names {
		require.NoError(t, mounts.WriteFile(ctx, m, n, []byte(n), 0o644))
	}
	nodes := map[string]*node{}
	for _, n := range names {
		nodes[n] = &node{}
	}
	get := func(c *readerCache, n string) *reader {
		t.Helper()
		r, err := c.get(nodes[n], false, func(bool) (mounts.File, bool, error) { f, err := fsys.Open(ctx, n); return f, true, err })
		require.NoError(t, err)
		buf := make([]byte, 1)
		_, err = r.f.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, n, string(buf))
		return r
	}

	c := newReaderCache(2)
	c.put(get(c, "a"))
	c.put(get(c, "a"))
	assert.Equal(t, int64(1), fsys.opens.Load(), "a hit opens nothing")

	ra := get(c, "a") // in use while b and c push it out
	c.put(get(c, "b"))
	c.put(get(c, "c"))
	assert.Equal(t, int64(3), fsys.open.Load(), "an evicted reader in use stays open")
	c.put(ra)
	assert.Equal(t, int64(2), fsys.open.Load(), "and closes when its last read is done")

	c.drop(nodes["b"], false)
	c.drop(nodes["a"], false) // not cached: nothing to do
	assert.Equal(t, int64(1), fsys.open.Load())
	c.clear(false)
	assert.Zero(t, fsys.open.Load())
	assert.Empty(t, c.m)
	assert.Zero(t, c.ll.Len())
}
