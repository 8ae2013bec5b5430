package receiver

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// maxCachedSecrets caps the cache: its keys come from request paths.
const maxCachedSecrets = 4096

// Why a receiver is not found, for the operator's logs only: every one is answered 404.
const (
	absentNoSecret  = "no such Secret"
	absentNoLabel   = "the Secret is not labelled " + ReceiverLabel + "=true"
	absentNoToken   = "the Secret has no non-empty key " + TokenKey
	absentForbidden = "the operator may not read Secrets in the namespace"
)

// receiverSecret is what is kept of a receiver Secret: its token, or why there is none.
type receiverSecret struct {
	token  []byte
	absent string // why the Secret is not a receiver; "" when it is
	read   time.Time
}

// secretCache reads receiver Secrets, and believes a read for ttl (of the
// Receiver's clock: its caller tells the time).
type secretCache struct {
	get SecretGetter
	ttl time.Duration

	mu sync.Mutex
	m  map[types.NamespacedName]receiverSecret
}

func newSecretCache(get SecretGetter, ttl time.Duration) *secretCache {
	return &secretCache{get: get, ttl: ttl, m: map[types.NamespacedName]receiverSecret{}}
}

// lookup returns the receiver Secret key, read less than ttl before now unless fresh,
// and whether it was read now. Errors other than not found and forbidden are
// returned, and not kept.
func (c *secretCache) lookup(ctx context.Context, key types.NamespacedName, fresh bool, now time.Time) (receiverSecret, bool, error) {
	if !fresh {
		c.mu.Lock()
		s, ok := c.m[key]
		c.mu.Unlock()
		if ok && now.Sub(s.read) < c.ttl {
			return s, false, nil
		}
	}
	s, err := c.read(ctx, key)
	if err != nil {
		return receiverSecret{}, false, err
	}
	s.read = now
	c.mu.Lock()
	defer c.mu.Unlock()
	_, known := c.m[key]
	if !known && len(c.m) >= maxCachedSecrets {
		for k, old := range c.m {
			if now.Sub(old.read) >= c.ttl {
				delete(c.m, k)
			}
		}
	}
	if known || len(c.m) < maxCachedSecrets {
		c.m[key] = s
	}
	return s, true, nil
}

func (c *secretCache) read(ctx context.Context, key types.NamespacedName) (receiverSecret, error) {
	secret, err := c.get(ctx, key.Namespace, key.Name)
	switch {
	case apierrors.IsNotFound(err):
		return receiverSecret{absent: absentNoSecret}, nil
	case apierrors.IsForbidden(err):
		return receiverSecret{absent: absentForbidden}, nil
	case err != nil:
		return receiverSecret{}, fmt.Errorf("reading receiver Secret %s: %w", key, err)
	case secret == nil:
		return receiverSecret{absent: absentNoSecret}, nil
	case secret.Labels[ReceiverLabel] != "true":
		return receiverSecret{absent: absentNoLabel}, nil
	}
	// A value written with `echo` into a file ends in a newline the git host never saw.
	token := bytes.TrimRight(secret.Data[TokenKey], "\r\n")
	if len(token) == 0 {
		return receiverSecret{absent: absentNoToken}, nil
	}
	return receiverSecret{token: bytes.Clone(token)}, nil
}
