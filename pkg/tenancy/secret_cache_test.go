package tenancy

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestSecretCache(t *testing.T) {
	c := newSecretCache()
	key := types.NamespacedName{Namespace: "ns", Name: "git"}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git", ResourceVersion: "7", Annotations: map[string]string{"a": "b"}},
		Data:       map[string][]byte{"token": []byte("t0ken")},
	}
	if _, ok := c.get(key, "7"); ok {
		t.Fatal("an empty cache answered")
	}
	c.put(key, secret)
	got, ok := c.get(key, "7")
	if !ok || string(got.Data["token"]) != "t0ken" || got.ResourceVersion != "7" {
		t.Fatalf("get at the version read = %+v, %v; want the Secret", got, ok)
	}
	if got.Annotations != nil {
		t.Errorf("kept annotations %v, want only what reading credentials needs", got.Annotations)
	}
	got.Data["token"] = []byte("changed by a caller")
	if again, _ := c.get(key, "7"); string(again.Data["token"]) != "t0ken" {
		t.Error("a caller's change reached the kept Secret")
	}
	if _, ok := c.get(key, "8"); ok {
		t.Error("answered for a version the watch saw change")
	}

	// Known not to exist: kept as such, until the watch sees one.
	gone := types.NamespacedName{Namespace: "ns", Name: "gone"}
	c.put(gone, nil)
	if s, ok := c.get(gone, ""); !ok || s != nil {
		t.Errorf("get of a missing Secret = %v, %v; want nil, true", s, ok)
	}
	if _, ok := c.get(gone, "1"); ok {
		t.Error("a Secret created since was answered as missing")
	}

	// Too large to keep, and the bound on all.
	big := secret.DeepCopy()
	big.Data["token"] = []byte(strings.Repeat("x", secretCacheMaxBytes))
	c.put(key, big)
	if _, ok := c.get(key, "7"); ok {
		t.Error("a Secret over secretCacheMaxBytes was kept")
	}
	per := secretCacheMaxBytes / 2
	for i := 0; i < 2*secretCacheBytes/per; i++ {
		s := secret.DeepCopy()
		s.Name, s.Data["token"] = fmt.Sprint("s", i), []byte(strings.Repeat("y", per))
		c.put(types.NamespacedName{Namespace: "ns", Name: s.Name}, s)
	}
	if c.bytes > secretCacheBytes {
		t.Errorf("kept %d bytes, over the bound of %d", c.bytes, secretCacheBytes)
	}
	if _, ok := c.get(types.NamespacedName{Namespace: "ns", Name: "s0"}, "7"); ok {
		t.Error("the least recently used Secret was not dropped")
	}
	last := fmt.Sprint("s", 2*secretCacheBytes/per-1)
	if _, ok := c.get(types.NamespacedName{Namespace: "ns", Name: last}, "7"); !ok {
		t.Error("the latest Secret was dropped")
	}
}
