package git

import (
	"math"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// byteLRU is an LRU bounded by the bytes its entries count rather than by their
// number: golang-lru's simplelru, which orders the entries, and a sum of their sizes
// it keeps in step through its eviction callback. Both caches of this package that are
// bounded by bytes keep one: the shared listings and the commit store. It is not safe
// for concurrent use: its owner's mutex, which guards more than the LRU, guards it.
type byteLRU[K comparable, V any] struct {
	lru   *simplelru.LRU[K, sized[V]]
	bytes int64
}

// sized is a value and what it counts.
type sized[V any] struct {
	value V
	size  int64
}

func newByteLRU[K comparable, V any]() *byteLRU[K, V] {
	c := &byteLRU[K, V]{}
	// Every removal, evictions and Purge included, goes through the callback. The
	// count is no bound (trim is): simplelru allocates nothing for it.
	c.lru, _ = simplelru.NewLRU[K, sized[V]](math.MaxInt, func(_ K, e sized[V]) { c.bytes -= e.size })
	return c
}

// get returns the value of key, and makes it the most recently used.
func (c *byteLRU[K, V]) get(key K) (V, bool) {
	e, ok := c.lru.Get(key)
	return e.value, ok
}

// peek returns the value of key, leaving the order as it is.
func (c *byteLRU[K, V]) peek(key K) (V, bool) {
	e, ok := c.lru.Peek(key)
	return e.value, ok
}

// add keeps value under key, counting size bytes, as the most recently used; it
// replaces what key held. It evicts nothing: see trim.
func (c *byteLRU[K, V]) add(key K, value V, size int64) {
	// simplelru replaces a value without its callback: remove the old one first.
	c.lru.Remove(key)
	c.lru.Add(key, sized[V]{value: value, size: size})
	c.bytes += size
}

// remove drops key.
func (c *byteLRU[K, V]) remove(key K) { c.lru.Remove(key) }

// trim evicts the least recently used entries until what is kept counts max bytes at
// most, telling evicted (when not nil) of each.
func (c *byteLRU[K, V]) trim(max int64, evicted func(K, V)) {
	for c.bytes > max {
		key, e, ok := c.lru.RemoveOldest()
		if !ok {
			return
		}
		if evicted != nil {
			evicted(key, e.value)
		}
	}
}

// purge drops every entry.
func (c *byteLRU[K, V]) purge() { c.lru.Purge() }

// len is how many entries are kept.
func (c *byteLRU[K, V]) len() int { return c.lru.Len() }
