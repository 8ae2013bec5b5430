package tenancy

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// Bounds of the Secrets a Secrets keeps.
const (
	// secretCacheBytes bounds the values of all kept Secrets together.
	secretCacheBytes = 16 << 20
	// secretCacheMaxBytes is the largest Secret kept: a larger one is read each time.
	secretCacheMaxBytes = 64 << 10
)

// secretCache keeps the Secrets Functions name, as read from the API server, each
// with the resourceVersion it was read at, so that a check reads a Secret again only
// when the namespace's metadata watch (SecretWatches) saw it change. Only Secrets a
// Function names are kept, never a namespace's others, within a memory bound: the
// least recently used go first (an lru.Cache with no bound on entries, trimmed by
// their size).
type secretCache struct {
	mu    sync.Mutex // holds put's remove, add and trim together
	lru   *lru.Cache // types.NamespacedName -> *secretEntry
	bytes int64      // of the entries in lru; changed by its eviction func, under mu
}

type secretEntry struct {
	version string         // "" for a Secret that does not exist
	secret  *corev1.Secret // nil for one that does not exist
	size    int64
}

func newSecretCache() *secretCache {
	c := &secretCache{}
	c.lru = lru.NewWithEvictionFunc(0, func(_ lru.Key, v any) { c.bytes -= v.(*secretEntry).size })
	return c
}

// get returns the Secret kept for key at version ("" and nil: known not to exist).
func (c *secretCache) get(key types.NamespacedName, version string) (*corev1.Secret, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.lru.Get(key)
	if !ok {
		return nil, false
	}
	e := v.(*secretEntry)
	if e.version != version {
		return nil, false
	}
	if e.secret == nil {
		return nil, true
	}
	return e.secret.DeepCopy(), true
}

// put keeps secret (nil: key does not exist).
func (c *secretCache) put(key types.NamespacedName, secret *corev1.Secret) {
	if c == nil {
		return
	}
	e := &secretEntry{size: 256}
	if secret != nil {
		e.version = secret.ResourceVersion
		for k, v := range secret.Data {
			e.size += int64(len(k) + len(v))
		}
		if e.size > secretCacheMaxBytes {
			c.drop(key)
			return
		}
		// Only what reading credentials needs: no managed fields, annotations or labels.
		e.secret = &corev1.Secret{Type: secret.Type, Data: make(map[string][]byte, len(secret.Data))}
		for k, v := range secret.Data {
			e.secret.Data[k] = append([]byte(nil), v...)
		}
		e.secret.Name, e.secret.Namespace, e.secret.ResourceVersion = secret.Name, secret.Namespace, secret.ResourceVersion
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key) // an Add over a kept key would not tell the eviction func
	c.lru.Add(key, e)
	c.bytes += e.size
	for c.bytes > secretCacheBytes {
		c.lru.RemoveOldest()
	}
}

func (c *secretCache) drop(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
}
