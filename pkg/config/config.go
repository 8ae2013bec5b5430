package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ConfigMapName is the name of the operator's ConfigMap, in its system namespace.
const ConfigMapName = "func-operator-config"

// Keys of the ConfigMap.
const (
	// KeyCheckInterval is how often every Function is checked again (a Go duration).
	KeyCheckInterval = "checkInterval"
	// KeyGitTimeout bounds each git operation: listing the branches, or a clone.
	KeyGitTimeout = "gitTimeout"
	// KeyAutoUpdateMiddleware says whether outdated middleware is rebuilt ("true" or
	// "false"), for Functions without spec.autoUpdateMiddleware.
	KeyAutoUpdateMiddleware = "autoUpdateMiddleware"
	// KeyUnknownMiddlewarePolicy says how a function whose image tells no middleware
	// version counts: "Outdated" (as upstream func does) or "UpToDate".
	KeyUnknownMiddlewarePolicy = "unknownMiddlewarePolicy"
)

// Values of KeyUnknownMiddlewarePolicy.
const (
	UnknownMiddlewareOutdated = "Outdated"
	UnknownMiddlewareUpToDate = "UpToDate"
)

// Defaults of the keys.
const (
	DefaultCheckInterval = 5 * time.Minute
	DefaultGitTimeout    = 60 * time.Second
	// MinCheckInterval keeps a typo from hammering every git server.
	MinCheckInterval = 10 * time.Second
)

// Config is the operator-wide configuration.
type Config struct {
	// CheckInterval is how often every Function is reconciled again, jittered by up to 10%.
	CheckInterval time.Duration
	// GitTimeout bounds each git operation.
	GitTimeout time.Duration
	// AutoUpdateMiddleware is the default for Functions without spec.autoUpdateMiddleware.
	AutoUpdateMiddleware bool
	// UnknownMiddlewarePolicy is UnknownMiddlewareOutdated or UnknownMiddlewareUpToDate.
	UnknownMiddlewarePolicy string
}

// Defaults returns the configuration used when the ConfigMap is absent.
func Defaults() Config {
	return Config{
		CheckInterval:           DefaultCheckInterval,
		GitTimeout:              DefaultGitTimeout,
		AutoUpdateMiddleware:    true,
		UnknownMiddlewarePolicy: UnknownMiddlewareOutdated,
	}
}

// FromConfigMap reads the configuration from cm (nil means absent). A key whose value
// is invalid keeps its default, and the returned error says which and why.
func FromConfigMap(cm *corev1.ConfigMap) (Config, error) {
	c := Defaults()
	if cm == nil {
		return c, nil
	}
	var errs []error
	durations := map[string]struct {
		into *time.Duration
		min  time.Duration
	}{
		KeyCheckInterval: {&c.CheckInterval, MinCheckInterval},
		KeyGitTimeout:    {&c.GitTimeout, time.Second},
	}
	keys := make([]string, 0, len(durations))
	for k := range durations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := cm.Data[k]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("key %s: %q is not a duration such as 5m or 90s", k, v))
		case d < durations[k].min:
			errs = append(errs, fmt.Errorf("key %s: %s is shorter than the minimum %s", k, d, durations[k].min))
		default:
			*durations[k].into = d
		}
	}
	if v, ok := cm.Data[KeyAutoUpdateMiddleware]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %s: %q is not true or false", KeyAutoUpdateMiddleware, v))
		} else {
			c.AutoUpdateMiddleware = b
		}
	}
	if v, ok := cm.Data[KeyUnknownMiddlewarePolicy]; ok {
		switch p := strings.TrimSpace(v); p {
		case UnknownMiddlewareOutdated, UnknownMiddlewareUpToDate:
			c.UnknownMiddlewarePolicy = p
		default:
			errs = append(errs, fmt.Errorf("key %s: %q is neither %s nor %s",
				KeyUnknownMiddlewarePolicy, v, UnknownMiddlewareOutdated, UnknownMiddlewareUpToDate))
		}
	}
	return c, errors.Join(errs...)
}

// Store holds the current configuration; it is safe for concurrent use.
type Store struct{ v atomic.Pointer[Config] }

// NewStore returns a Store holding the defaults.
func NewStore() *Store {
	s := &Store{}
	s.Set(Defaults())
	return s
}

// Load returns the current configuration.
func (s *Store) Load() Config { return *s.v.Load() }

// Set replaces the current configuration.
func (s *Store) Set(c Config) { s.v.Store(&c) }
