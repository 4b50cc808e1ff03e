// Package lru is the one least-recently-used cache of gitfs: its tree
// cache, its decoded blob cache and the object store's delta bases are
// each bounded by the bytes they hold, not by a number of entries, so each
// entry has a cost and the cache a bound on their sum.
//
// # Why not a library
//
// github.com/hashicorp/golang-lru/v2 bounds a cache by its number of
// entries only. A cost bound on top of it would keep a second account of
// every entry beside the library's own list and map; this file is that
// list and map, once.
//
// # Behaviours of note
//
//   - [LRU.Add] keeps the entry it adds even when that entry alone is over
//     the bound: the caller decided to keep it. It is then the only entry,
//     and the next Add evicts it. A caller that wants no such entry checks
//     its cost before Add.
//   - Adding a key already present keeps the value there (the values of
//     one key are interchangeable in every cache here: decoded immutable
//     objects) and only marks it used.
//   - An LRU is not safe for concurrent use: each cache guards more than
//     its LRU (hit counters, pinned entries) under one lock of its own.
package lru

// LRU maps keys to values in order of use, and evicts the least recently
// used entries when the sum of their costs exceeds its bound.
type LRU[K comparable, V any] struct {
	max  int64
	cost func(V) int64
	used int64
	m    map[K]*entry[K, V]
	// root is the sentinel of a circular list: root.next is the most
	// recently used entry, root.prev the least.
	root entry[K, V]
}

type entry[K comparable, V any] struct {
	key        K
	val        V
	cost       int64
	prev, next *entry[K, V]
}

// New returns an empty LRU bounded to max in the sum of cost over its
// values. cost is called once per value, when it is added.
func New[K comparable, V any](max int64, cost func(V) int64) *LRU[K, V] {
	c := &LRU[K, V]{max: max, cost: cost, m: make(map[K]*entry[K, V])}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

// Get returns the value of k and marks it used.
func (c *LRU[K, V]) Get(k K) (V, bool) {
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.toFront(e)
	return e.val, true
}

// Add adds v under k as the most recently used entry and evicts the least
// recently used others while the cache is over its bound. When k is there
// already, its value stays, is marked used, and is returned with true.
func (c *LRU[K, V]) Add(k K, v V) (V, bool) {
	if e, ok := c.m[k]; ok {
		c.toFront(e)
		return e.val, true
	}
	e := &entry[K, V]{key: k, val: v, cost: c.cost(v)}
	c.m[k] = e
	c.used += e.cost
	c.link(e)
	for c.used > c.max && c.root.prev != e {
		c.remove(c.root.prev)
	}
	return v, false
}

// Remove removes k and returns its value.
func (c *LRU[K, V]) Remove(k K) (V, bool) {
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.remove(e)
	return e.val, true
}

// RemoveOldest removes the least recently used entry and returns it.
func (c *LRU[K, V]) RemoveOldest() (K, V, bool) {
	e := c.root.prev
	if e == &c.root {
		var (
			k K
			v V
		)
		return k, v, false
	}
	c.remove(e)
	return e.key, e.val, true
}

// Len returns the number of entries.
func (c *LRU[K, V]) Len() int { return len(c.m) }

// Cost returns the sum of the costs of the entries.
func (c *LRU[K, V]) Cost() int64 { return c.used }

// Clear removes every entry.
func (c *LRU[K, V]) Clear() {
	clear(c.m)
	c.root.prev, c.root.next = &c.root, &c.root
	c.used = 0
}

func (c *LRU[K, V]) link(e *entry[K, V]) {
	e.prev, e.next = &c.root, c.root.next
	e.next.prev = e
	c.root.next = e
}

func (c *LRU[K, V]) unlink(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *LRU[K, V]) toFront(e *entry[K, V]) {
	if c.root.next != e {
		c.unlink(e)
		c.link(e)
	}
}

func (c *LRU[K, V]) remove(e *entry[K, V]) {
	c.unlink(e)
	delete(c.m, e.key)
	c.used -= e.cost
}
