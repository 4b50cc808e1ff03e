package lru

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newBytes is an LRU of byte slices costing their length.
func newBytes(max int64) *LRU[string, []byte] {
	return New[string](max, func(b []byte) int64 { return int64(len(b)) })
}

// keys lists the keys from the least to the most recently used.
func keys[K comparable, V any](c *LRU[K, V]) []K {
	var out []K
	for e := c.root.prev; e != &c.root; e = e.prev {
		out = append(out, e.key)
	}
	return out
}

func TestEvictsLeastRecentlyUsedByCost(t *testing.T) {
	c := newBytes(100)
	c.Add("a", make([]byte, 40))
	c.Add("b", make([]byte, 40))
	_, ok := c.Get("a") // a is now the most recent
	require.True(t, ok)
	c.Add("c", make([]byte, 30)) // 110 > 100: b goes
	assert.Equal(t, []string{"a", "c"}, keys(c))
	assert.Equal(t, int64(70), c.Cost())
	assert.Equal(t, 2, c.Len())
	_, ok = c.Get("b")
	assert.False(t, ok, "the least recently used went")

	c.Add("d", make([]byte, 90)) // a and c go, oldest first
	assert.Equal(t, []string{"d"}, keys(c))
	assert.Equal(t, int64(90), c.Cost())
}

func TestKeepsTheNewestEntryOverTheBound(t *testing.T) {
	c := newBytes(100)
	c.Add("a", make([]byte, 10))
	c.Add("big", make([]byte, 150))
	assert.Equal(t, []string{"big"}, keys(c), "kept alone")
	assert.Equal(t, int64(150), c.Cost())
	c.Add("b", make([]byte, 10))
	assert.Equal(t, []string{"b"}, keys(c), "evicted by the next Add")
	assert.Equal(t, int64(10), c.Cost())
}

func TestAddOfAKeyThereKeepsItsValue(t *testing.T) {
	c := newBytes(100)
	first := []byte("first")
	c.Add("k", first)
	c.Add("other", []byte("x"))
	got, there := c.Add("k", []byte("second value"))
	assert.True(t, there)
	assert.Same(t, &first[0], &got[0], "the value there stays")
	assert.Equal(t, []string{"other", "k"}, keys(c), "and is marked used")
	assert.Equal(t, int64(6), c.Cost(), "costed once")
	got, there = c.Add("new", []byte("n"))
	assert.False(t, there)
	assert.Equal(t, "n", string(got))
}

func TestRemove(t *testing.T) {
	c := newBytes(100)
	for _, k := range []string{"a", "b", "c"} {
		c.Add(k, []byte(k+k))
	}
	v, ok := c.Remove("b")
	require.True(t, ok)
	assert.Equal(t, "bb", string(v))
	_, ok = c.Remove("b")
	assert.False(t, ok, "gone")
	assert.Equal(t, []string{"a", "c"}, keys(c))
	assert.Equal(t, int64(4), c.Cost())

	k, v, ok := c.RemoveOldest()
	require.True(t, ok)
	assert.Equal(t, "a", k)
	assert.Equal(t, "aa", string(v))
	k, _, ok = c.RemoveOldest()
	require.True(t, ok)
	assert.Equal(t, "c", k)
	_, _, ok = c.RemoveOldest()
	assert.False(t, ok, "empty")
	assert.Zero(t, c.Cost())
	assert.Zero(t, c.Len())
}

func TestClear(t *testing.T) {
	c := newBytes(100)
	c.Add("a", []byte("aa"))
	c.Add("b", []byte("bb"))
	c.Clear()
	assert.Zero(t, c.Len())
	assert.Zero(t, c.Cost())
	assert.Empty(t, keys(c))
	_, ok := c.Get("a")
	assert.False(t, ok)
	c.Add("c", []byte("cc"))
	assert.Equal(t, []string{"c"}, keys(c), "usable after Clear")
}

func TestZeroBoundKeepsOnlyTheNewest(t *testing.T) {
	c := newBytes(0)
	c.Add("a", []byte("a"))
	c.Add("b", []byte("b"))
	assert.Equal(t, []string{"b"}, keys(c))
	c.Add("empty", nil)
	c.Add("also empty", []byte{})
	assert.Equal(t, []string{"empty", "also empty"}, keys(c), "entries of no cost fit any bound")
}
