// Package lru is the one least-recently-used cache of gitfs: its tree
// cache, its decoded blob cache and the object store's delta bases are
// each bounded by the bytes they hold, not by a number of entries, so each
// entry has a cost and the cache a bound on their sum.
//
// # Why not a library
//
// github.com/hashicorp/golang-lru/v2 bounds a cache by its number of
// entries only, and cannot keep an entry from eviction. A cost bound and
// pinning on top of it would keep a second account of every entry beside
// the library's own list and map; this file is that list and map, once.
//
// # Pinning
//
// The blob cache must not evict the content of a file that is open. A
// pinned entry ([LRU.Pin], [LRU.AddPinned]) stays in the cache and counts
// toward the bound, but is out of the eviction order until [LRU.Unpin]
// puts it back. Pinning costs one lookup and no allocation, so the blob
// cache pins and unpins on every open and close of a file.
//
// # Behaviours of note
//
//   - Eviction takes the least recently used unpinned entries while the
//     cost of all entries, pinned ones included, is over the bound: a
//     cache whose pinned entries are over it on their own keeps no
//     unpinned entry.
//   - [LRU.Add] keeps the entry it adds even when it does not fit: the
//     caller decided to keep it, and the next Add evicts it. [LRU.Unpin]
//     keeps nothing that does not fit, the entry it unpins included: an
//     entry larger than the cache goes as soon as nobody holds it. A
//     caller that wants no oversized entry at all checks its cost first.
//   - Adding a key already present keeps the value there (the values of
//     one key are interchangeable in every cache here: decoded immutable
//     objects) and only marks it used.
//   - An LRU is not safe for concurrent use: each cache guards more than
//     its LRU (hit counters, pin counts) under one lock of its own.
package lru

// LRU maps keys to values in order of use, and evicts the least recently
// used unpinned entries when the sum of the costs of all exceeds its
// bound.
type LRU[K comparable, V any] struct {
	max     int64
	cost    func(V) int64
	onEvict func(K, V)
	used    int64
	m       map[K]*entry[K, V]
	// root is the sentinel of a circular list of the unpinned entries:
	// root.next is the most recently used, root.prev the least.
	root entry[K, V]
}

type entry[K comparable, V any] struct {
	key        K
	val        V
	cost       int64
	prev, next *entry[K, V] // nil while pinned
}

// New returns an empty LRU bounded to max in the sum of cost over its
// values. cost is called once per value, when it is added. onEvict, when
// not nil, is told of every entry that eviction or Clear removes.
func New[K comparable, V any](max int64, cost func(V) int64, onEvict func(K, V)) *LRU[K, V] {
	c := &LRU[K, V]{max: max, cost: cost, onEvict: onEvict, m: make(map[K]*entry[K, V])}
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
	if e.next != nil {
		c.unlink(e)
		c.link(e)
	}
	return e.val, true
}

// Add adds v under k as the most recently used entry and evicts while the
// cache is over its bound, never the entry added. When k is there already,
// its value stays, is marked used, and is returned with true.
func (c *LRU[K, V]) Add(k K, v V) (V, bool) {
	if e, ok := c.m[k]; ok {
		if e.next != nil {
			c.unlink(e)
			c.link(e)
		}
		return e.val, true
	}
	e := c.insert(k, v)
	c.link(e)
	c.evict(e)
	return v, false
}

// AddPinned adds v under k pinned; it evicts nothing. When k is there
// already, its value stays, is pinned, and is returned with true.
func (c *LRU[K, V]) AddPinned(k K, v V) (V, bool) {
	if e, ok := c.m[k]; ok {
		if e.next != nil {
			c.unlink(e)
		}
		return e.val, true
	}
	c.insert(k, v)
	return v, false
}

// Pin returns the value of k and takes it out of the eviction order until
// Unpin. Pinning a pinned entry changes nothing.
func (c *LRU[K, V]) Pin(k K) (V, bool) {
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	if e.next != nil {
		c.unlink(e)
	}
	return e.val, true
}

// Unpin puts k back in the eviction order as the most recently used entry
// and evicts while the cache is over its bound, k included. It reports
// whether k was in the cache.
func (c *LRU[K, V]) Unpin(k K) bool {
	e, ok := c.m[k]
	if !ok {
		return false
	}
	if e.next == nil {
		c.link(e)
	}
	c.evict(nil)
	return true
}

// Remove removes k, pinned or not, without telling onEvict (the caller
// decided), and reports whether it was there.
func (c *LRU[K, V]) Remove(k K) bool {
	e, ok := c.m[k]
	if !ok {
		return false
	}
	if e.next != nil {
		c.unlink(e)
	}
	delete(c.m, k)
	c.used -= e.cost
	return true
}

// Len returns the number of entries, pinned ones included.
func (c *LRU[K, V]) Len() int { return len(c.m) }

// Cost returns the sum of the costs of the entries, pinned ones included.
func (c *LRU[K, V]) Cost() int64 { return c.used }

// Clear removes every entry, pinned ones included, and tells onEvict of
// each.
func (c *LRU[K, V]) Clear() {
	m := c.m
	c.m = make(map[K]*entry[K, V])
	c.root.prev, c.root.next = &c.root, &c.root
	c.used = 0
	if c.onEvict != nil {
		for k, e := range m {
			c.onEvict(k, e.val)
		}
	}
}

func (c *LRU[K, V]) insert(k K, v V) *entry[K, V] {
	e := &entry[K, V]{key: k, val: v, cost: c.cost(v)}
	c.m[k] = e
	c.used += e.cost
	return e
}

// evict removes the least recently used unpinned entries but keep while
// the cache is over its bound.
func (c *LRU[K, V]) evict(keep *entry[K, V]) {
	for c.used > c.max {
		e := c.root.prev
		if e == &c.root || e == keep {
			return
		}
		c.unlink(e)
		delete(c.m, e.key)
		c.used -= e.cost
		if c.onEvict != nil {
			c.onEvict(e.key, e.val)
		}
	}
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
