package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// Keys of base updates: what the operator does when the base a function's image was
// built on (a buildpacks run image, an s2i builder) moves on (docs/base-images.md).
const (
	// KeyBaseUpdates is the base policy of Functions without annotation
	// functions.dev/base-updates: Off, Report, Rebase or RebaseAndRebuild.
	KeyBaseUpdates = "baseUpdates"
	// KeyBaseImageMirrors maps base image prefixes to mirrors the operator reads (and
	// rebases from) instead, for clusters that cannot reach the public registries:
	// "docker.io/paketobuildpacks=registry.example/paketo, ..." (the longest prefix wins).
	KeyBaseImageMirrors = "baseImageMirrors"
	// KeyBaseCheckInterval is how long what a base's tag points to is taken as read
	// (one request per base and credentials in each interval, fleet-wide).
	KeyBaseCheckInterval = "baseCheckInterval"
	// KeyRebaseTimeout bounds a rebase: pulling, rebasing, pushing and deploying.
	KeyRebaseTimeout = "rebaseTimeout"
	// KeyMaintenanceWindow is when base updates may roll out: "Sat 02:00-06:00; Sun
	// 02:00-06:00" (UTC; ParseWindow). Empty or absent: any time.
	KeyMaintenanceWindow = "maintenanceWindow"
	// KeyMaintenanceWindowCauses names the build causes the window holds, comma
	// separated: Base (the default), Middleware, or both.
	KeyMaintenanceWindowCauses = "maintenanceWindowCauses"
)

// Defaults of the base keys.
const (
	DefaultBaseUpdates       = v1alpha1.BaseUpdatesReport
	DefaultBaseCheckInterval = 10 * time.Minute
	MinBaseCheckInterval     = time.Minute
	DefaultRebaseTimeout     = 10 * time.Minute
	// maxMirrors bounds baseImageMirrors.
	maxMirrors = 64
)

// Base is the configuration of base updates.
type Base struct {
	// Updates is the default base policy (v1alpha1.BaseUpdates*).
	Updates string
	// Mirrors maps a base image prefix (a registry, or a registry and path) to the
	// prefix read instead.
	Mirrors map[string]string
	// CheckInterval is how long a base tag's digest stands as read.
	CheckInterval time.Duration
	// RebaseTimeout bounds one rebase and its deploy.
	RebaseTimeout time.Duration
	// Window is when base updates (and the causes in WindowCauses) may roll out.
	Window Window
	// WindowCauses are the build causes Window holds (v1alpha1.BuildCause*).
	WindowCauses []string
}

// DefaultBase is the base configuration when no key is set.
func DefaultBase() Base {
	return Base{Updates: DefaultBaseUpdates, CheckInterval: DefaultBaseCheckInterval, RebaseTimeout: DefaultRebaseTimeout,
		WindowCauses: []string{v1alpha1.BuildCauseBase}}
}

// Holds reports whether the maintenance window holds builds of cause.
func (b Base) Holds(cause string) bool {
	for _, c := range b.WindowCauses {
		if c == cause {
			return !b.Window.Always()
		}
	}
	return false
}

var baseKeepers = map[string]func(c *Config, last Config){
	KeyBaseUpdates:             func(c *Config, last Config) { c.Base.Updates = last.Base.Updates },
	KeyBaseImageMirrors:        func(c *Config, last Config) { c.Base.Mirrors = last.Base.Mirrors },
	KeyBaseCheckInterval:       func(c *Config, last Config) { c.Base.CheckInterval = last.Base.CheckInterval },
	KeyRebaseTimeout:           func(c *Config, last Config) { c.Base.RebaseTimeout = last.Base.RebaseTimeout },
	KeyMaintenanceWindow:       func(c *Config, last Config) { c.Base.Window = last.Base.Window },
	KeyMaintenanceWindowCauses: func(c *Config, last Config) { c.Base.WindowCauses = last.Base.WindowCauses },
}

func init() {
	for k, f := range baseKeepers {
		keepers[k] = f
	}
}

// parseBase reads the base keys of cm into c.
func parseBase(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) {
	if v, ok := cm.Data[KeyBaseUpdates]; ok {
		if p, err := v1alpha1.ParseBaseUpdates(v); err != nil {
			fail(KeyBaseUpdates, fmt.Errorf("key %s: %w", KeyBaseUpdates, err))
		} else {
			c.Base.Updates = p
		}
	}
	if v, ok := cm.Data[KeyBaseImageMirrors]; ok {
		if m, err := parseMirrors(v); err != nil {
			fail(KeyBaseImageMirrors, fmt.Errorf("key %s: %w", KeyBaseImageMirrors, err))
		} else {
			c.Base.Mirrors = m
		}
	}
	for _, d := range []struct {
		key  string
		into *time.Duration
		min  time.Duration
	}{{KeyBaseCheckInterval, &c.Base.CheckInterval, MinBaseCheckInterval}, {KeyRebaseTimeout, &c.Base.RebaseTimeout, 10 * time.Second}} {
		v, ok := cm.Data[d.key]
		if !ok {
			continue
		}
		got, err := time.ParseDuration(v) // untrimmed, as every duration key (and the ConfigMap policy)
		switch {
		case err != nil:
			fail(d.key, fmt.Errorf("key %s: %q is not a duration such as 5m or 90s", d.key, v))
		case got < d.min:
			fail(d.key, fmt.Errorf("key %s: %s is shorter than the minimum %s", d.key, got, d.min))
		default:
			*d.into = got
		}
	}
	if v, ok := cm.Data[KeyMaintenanceWindow]; ok {
		if w, err := ParseWindow(v); err != nil {
			fail(KeyMaintenanceWindow, fmt.Errorf("key %s: %w", KeyMaintenanceWindow, err))
		} else {
			c.Base.Window = w
		}
	}
	if v, ok := cm.Data[KeyMaintenanceWindowCauses]; ok {
		var causes []string
		var err error
		for _, c := range strings.Split(v, ",") {
			switch c = strings.TrimSpace(c); c {
			case v1alpha1.BuildCauseBase, v1alpha1.BuildCauseMiddleware:
				causes = append(causes, c)
			case "":
			default:
				err = fmt.Errorf("key %s: %q is not %s or %s", KeyMaintenanceWindowCauses, c, v1alpha1.BuildCauseBase, v1alpha1.BuildCauseMiddleware)
			}
		}
		if err != nil {
			fail(KeyMaintenanceWindowCauses, err)
		} else {
			c.Base.WindowCauses = causes
		}
	}
}

// parseMirrors reads "prefix=mirror, prefix=mirror": each side a registry, or a
// registry and repository path, as an image reference names them.
func parseMirrors(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || !validPrefix(from) || !validPrefix(to) {
			return nil, fmt.Errorf("%q is not prefix=mirror, such as docker.io/paketobuildpacks=registry.example/paketo", pair)
		}
		m[from] = to
	}
	if len(m) > maxMirrors {
		return nil, fmt.Errorf("more than %d mirrors", maxMirrors)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// validPrefix is true for a registry ("registry.example:5000") or a registry and a
// repository path ("docker.io/paketobuildpacks").
func validPrefix(p string) bool {
	if p == "" || strings.ContainsAny(p, "@ ") {
		return false
	}
	_, err := name.NewRepository(p+"/xx", name.StrictValidation)
	return err == nil
}

// MirrorList is the mirrors as "prefix=mirror" pairs, sorted (for messages).
func (b Base) MirrorList() []string {
	out := make([]string, 0, len(b.Mirrors))
	for k, v := range b.Mirrors {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
