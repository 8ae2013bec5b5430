package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fnops/func-operator/pkg/netguard"
)

// parseBounds reads the keys that bound what one Function may cost the operator.
func parseBounds(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) {
	sizes := map[string]struct {
		into     *int64
		min, max int64
	}{
		KeyCloneMaxBytes:       {&c.CloneMaxBytes, 1 << 20, 1 << 40},
		KeyCloneMaxObjectBytes: {&c.CloneMaxObjectBytes, 1 << 20, 1 << 30},
		KeyCommitStoreMaxBytes: {&c.CommitStoreMaxBytes, 1 << 20, 512 << 20},
		KeyInspectMaxMemory:    {&c.InspectMaxMemory, 1 << 20, 256 << 20},
		KeyInspectMaxBytes:     {&c.InspectMaxBytes, 1 << 20, 1 << 40},
	}
	for _, k := range sortedKeys(sizes) {
		v, ok := cm.Data[k]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(v))
		n := q.Value() // rounded up; wraps past int64, hence the comparisons of q itself
		switch b := sizes[k]; {
		case err != nil:
			fail(k, fmt.Errorf("key %s: %q is not a size such as 100Mi", k, v))
		case q.Sign() < 0 || q.CmpInt64(b.max) > 0 || n < b.min:
			fail(k, fmt.Errorf("key %s: %s is outside %s to %s", k, v, resource.NewQuantity(b.min, resource.BinarySI), resource.NewQuantity(b.max, resource.BinarySI)))
		default:
			*b.into = n
		}
	}
	counts := map[string]struct {
		into     func(int64)
		min, max int64
	}{
		KeyCloneMaxFiles:            {func(n int64) { c.CloneMaxFiles = n }, 100, 10_000_000},
		KeyConditionMessageMaxBytes: {func(n int64) { c.ConditionMessageMaxBytes = int(n) }, 128, 32 << 10},
		KeyEventMessageMaxBytes:     {func(n int64) { c.EventMessageMaxBytes = int(n) }, 128, 32 << 10},
		KeyBuildLogLines:            {func(n int64) { c.BuildLogLines = int(n) }, 0, 1000},
	}
	for _, k := range sortedKeys(counts) {
		v, ok := cm.Data[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch b := counts[k]; {
		case err != nil:
			fail(k, fmt.Errorf("key %s: %q is not a whole number", k, v))
		case n < b.min || n > b.max:
			fail(k, fmt.Errorf("key %s: %d is outside %d to %d", k, n, b.min, b.max))
		default:
			b.into(n)
		}
	}
}

// parseHosts reads the allow and deny lists of the network policy.
func parseHosts(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) {
	for _, k := range []string{KeyHostAllow, KeyHostDeny} {
		v, ok := cm.Data[k]
		if !ok {
			continue
		}
		entries := HostEntries(v)
		var bad []string
		for _, e := range entries {
			if _, err := netguard.ParseEntry(e); err != nil {
				bad = append(bad, err.Error())
			}
		}
		if len(bad) > 0 {
			fail(k, fmt.Errorf("key %s: %s", k, strings.Join(bad, "; ")))
			continue
		}
		if k == KeyHostAllow {
			c.HostAllow = entries
		} else {
			c.HostDeny = entries
		}
	}
}

// HostEntries splits a list of hosts written one per line or comma separated;
// "#" starts a comment.
func HostEntries(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Keys returns every key the operator reads (builderImage.<builder>.<runtime>
// and eventSink.<namespace> keys as their prefix), sorted.
func Keys() []string {
	keys := append(sortedKeys(keepers), KeyBuilderImagePrefix, KeyEventSinkPrefix)
	sort.Strings(keys)
	return keys
}
