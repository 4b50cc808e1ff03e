package lru

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newBytes is an LRU of byte slices costing their length, which records
// what it evicts in *evicted.
func newBytes(max int64, evicted *[]string) *LRU[string, []byte] {
	return New[string](max, func(b []byte) int64 { return int64(len(b)) }, func(k string, _ []byte) {
		*evicted = append(*evicted, k)
	})
}

// order lists the unpinned keys from the least to the most recently used.
func order[K comparable, V any](c *LRU[K, V]) []K {
	var out []K
	for e := c.root.prev; e != &c.root; e = e.prev {
		out = append(out, e.key)
	}
	return out
}

func TestEvictsLeastRecentlyUsedByCost(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	c.Add("a", make([]byte, 40))
	c.Add("b", make([]byte, 40))
	_, ok := c.Get("a") // a is now the most recent
	require.True(t, ok)
	c.Add("c", make([]byte, 30)) // 110 > 100: b goes
	assert.Equal(t, []string{"a", "c"}, order(c))
	assert.Equal(t, []string{"b"}, evicted)
	assert.Equal(t, int64(70), c.Cost())
	assert.Equal(t, 2, c.Len())
	_, ok = c.Get("b")
	assert.False(t, ok, "the least recently used went")

	c.Add("d", make([]byte, 90)) // a and c go, oldest first
	assert.Equal(t, []string{"d"}, order(c))
	assert.Equal(t, []string{"b", "a", "c"}, evicted)
	assert.Equal(t, int64(90), c.Cost())
}

func TestAddKeepsTheNewestEntryOverTheBound(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	c.Add("a", make([]byte, 10))
	c.Add("big", make([]byte, 150))
	assert.Equal(t, []string{"big"}, order(c), "kept alone")
	assert.Equal(t, int64(150), c.Cost())
	c.Add("b", make([]byte, 10))
	assert.Equal(t, []string{"b"}, order(c), "evicted by the next Add")
	assert.Equal(t, []string{"a", "big"}, evicted)
	assert.Equal(t, int64(10), c.Cost())
}

func TestAddOfAKeyThereKeepsItsValue(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	first := []byte("first")
	c.Add("k", first)
	c.Add("other", []byte("x"))
	got, there := c.Add("k", []byte("second value"))
	assert.True(t, there)
	assert.Same(t, &first[0], &got[0], "the value there stays")
	assert.Equal(t, []string{"other", "k"}, order(c), "and is marked used")
	assert.Equal(t, int64(6), c.Cost(), "costed once")
	got, there = c.Add("new", []byte("n"))
	assert.False(t, there)
	assert.Equal(t, "n", string(got))
	assert.Empty(t, evicted)
}

func TestPinnedEntriesAreNotEvicted(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	c.Add("a", make([]byte, 30))
	c.Add("b", make([]byte, 30))
	v, ok := c.Pin("a")
	require.True(t, ok)
	assert.Len(t, v, 30)
	assert.Equal(t, []string{"b"}, order(c), "a is out of the eviction order")
	_, ok = c.Pin("a")
	assert.True(t, ok, "pinning twice changes nothing")
	_, ok = c.Get("a")
	assert.True(t, ok, "a pinned entry is found")
	assert.Equal(t, []string{"b"}, order(c), "and stays pinned")

	c.Add("c", make([]byte, 50)) // 110 > 100: b goes, a stays
	assert.Equal(t, []string{"b"}, evicted)
	assert.Equal(t, int64(80), c.Cost(), "a pinned entry counts toward the bound")
	_, _ = c.AddPinned("d", make([]byte, 60)) // 140: AddPinned evicts nothing
	assert.Equal(t, []string{"b"}, evicted)
	assert.Equal(t, int64(140), c.Cost())
	assert.Equal(t, 3, c.Len())

	// Unpinning evicts what no longer fits, least recently used first, the
	// unpinned entry included.
	assert.True(t, c.Unpin("a")) // order c, a: 140 > 100, c goes; 90
	assert.Equal(t, []string{"b", "c"}, evicted)
	assert.Equal(t, []string{"a"}, order(c))
	assert.True(t, c.Unpin("d")) // order a, d: 90 fits
	assert.Equal(t, []string{"a", "d"}, order(c))
	assert.False(t, c.Unpin("gone"))

	_, ok = c.Pin("a")
	require.True(t, ok)
	got, there := c.AddPinned("a", nil)
	assert.True(t, there, "AddPinned of a key there keeps its value")
	assert.Len(t, got, 30)
}

func TestUnpinEvictsAnEntryThatDoesNotFit(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	c.Add("small", make([]byte, 10))
	c.AddPinned("big", make([]byte, 300))
	c.Add("other", make([]byte, 10)) // over, but only the newest is left to evict
	assert.Equal(t, []string{"small"}, evicted, "pinned, big stays; the newest is kept")
	assert.True(t, c.Unpin("big"))
	assert.Equal(t, []string{"small", "other", "big"}, evicted, "unpinned, big goes at once")
	assert.Zero(t, c.Len())
	assert.Zero(t, c.Cost())
}

func TestClear(t *testing.T) {
	var evicted []string
	c := newBytes(100, &evicted)
	c.Add("a", []byte("aa"))
	c.AddPinned("b", []byte("bb"))
	c.Clear()
	assert.ElementsMatch(t, []string{"a", "b"}, evicted, "pinned entries too")
	assert.Zero(t, c.Len())
	assert.Zero(t, c.Cost())
	assert.Empty(t, order(c))
	_, ok := c.Get("a")
	assert.False(t, ok)
	assert.False(t, c.Unpin("b"), "a cleared entry is gone")
	c.Add("c", []byte("cc"))
	assert.Equal(t, []string{"c"}, order(c), "usable after Clear")
}

func TestZeroBoundKeepsOnlyTheNewest(t *testing.T) {
	c := New[string](0, func(b []byte) int64 { return int64(len(b)) }, nil)
	c.Add("a", []byte("a"))
	c.Add("b", []byte("b"))
	assert.Equal(t, []string{"b"}, order(c))
	c.Add("empty", nil)
	c.Add("also empty", []byte{})
	assert.Equal(t, []string{"empty", "also empty"}, order(c), "entries of no cost fit any bound")
}

func TestRemove(t *testing.T) {
	var evicted []string
	c := newBytes(10, &evicted)
	c.Add("a", []byte("aaa"))
	c.AddPinned("b", []byte("bb"))
	if !c.Remove("a") || !c.Remove("b") || c.Remove("a") {
		t.Fatal("Remove reports an entry that is not there, or misses one that is")
	}
	if c.Len() != 0 || c.Cost() != 0 || len(evicted) != 0 || len(order(c)) != 0 {
		t.Fatalf("after Remove: len %d cost %d evicted %v order %v", c.Len(), c.Cost(), evicted, order(c))
	}
	c.Add("c", []byte("cccccccccc"))
	if got := order(c); len(got) != 1 || got[0] != "c" {
		t.Fatalf("order after Remove and Add: %v", got)
	}
}
