package function

import (
	"container/list"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the Secrets a Reconciler keeps.
const (
	// secretCacheBytes bounds the values of all kept Secrets together.
	secretCacheBytes = 16 << 20
	// secretCacheMaxBytes is the largest Secret kept: a larger one is read each time.
	secretCacheMaxBytes = 64 << 10
)

// secretCache keeps the Secrets Functions name, as read from the API server, each
// with the resourceVersion it was read at, so that a check reads a Secret again only
// when the namespace's metadata watch (SecretWatches) saw it change. Only Secrets a
// Function names are kept, never a namespace's others, within a memory bound.
type secretCache struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*list.Element
	lru     *list.List // of *secretEntry, most recently used first
	bytes   int64
}

type secretEntry struct {
	key     types.NamespacedName
	version string         // "" for a Secret that does not exist
	secret  *corev1.Secret // nil for one that does not exist
	size    int64
}

func newSecretCache() *secretCache {
	return &secretCache{entries: map[types.NamespacedName]*list.Element{}, lru: list.New()}
}

// get returns the Secret kept for key at version ("" and nil: known not to exist).
func (c *secretCache) get(key types.NamespacedName, version string) (*corev1.Secret, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*secretEntry)
	if e.version != version {
		return nil, false
	}
	c.lru.MoveToFront(el)
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
	e := &secretEntry{key: key, size: 256}
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
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(e)
	c.bytes += e.size
	for c.bytes > secretCacheBytes {
		c.remove(c.lru.Back())
	}
}

func (c *secretCache) drop(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
}

func (c *secretCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*secretEntry)
	delete(c.entries, e.key)
	c.bytes -= e.size
}
