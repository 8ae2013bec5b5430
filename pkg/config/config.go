package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// KeyMaxConcurrentBuilds is how many rebuilds may run at once, cluster-wide; the
	// others wait in a fair queue. 0 pauses rebuilds.
	KeyMaxConcurrentBuilds = "maxConcurrentBuilds"
	// KeyBuildBackoff is how long a failed rebuild waits before its first retry; the
	// wait doubles with every further failure.
	KeyBuildBackoff = "buildBackoff"
	// KeyBuildBackoffMax caps the wait between retries of a failing rebuild.
	KeyBuildBackoffMax = "buildBackoffMax"
	// KeyPipelineServiceAccount is the ServiceAccount the build PipelineRuns run as in
	// each function namespace; a namespace admin creates it and binds it to the
	// func-operator-builder ClusterRole (config/namespace/onboard.yaml). It is never
	// "default": ordinary pods run as that one.
	KeyPipelineServiceAccount = "pipelineServiceAccount"
	// KeyDeployerImage is the image of the pipeline's scaffold and deploy steps
	// (func-utils). It is read when the operator starts.
	KeyDeployerImage = "deployerImage"
	// KeyBuilderImagePrefix prefixes the keys builderImage.<builder>.<runtime> (builder
	// pack or s2i) that pin the builder image of a runtime. A builder image that the
	// function's func.yaml names (build.builderImages) wins.
	KeyBuilderImagePrefix = "builderImage."
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

	DefaultMaxConcurrentBuilds    = 2
	DefaultBuildBackoff           = time.Minute
	DefaultBuildBackoffMax        = time.Hour
	DefaultPipelineServiceAccount = "func-operator-builder"
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
	// MaxConcurrentBuilds is how many rebuilds may run at once, cluster-wide.
	MaxConcurrentBuilds int
	// BuildBackoff is the wait before the first retry of a failed rebuild.
	BuildBackoff time.Duration
	// BuildBackoffMax caps the wait between retries.
	BuildBackoffMax time.Duration
	// PipelineServiceAccount is the ServiceAccount build PipelineRuns run as.
	PipelineServiceAccount string
	// DeployerImage overrides the func-utils image of the pipeline; empty keeps the
	// func library's.
	DeployerImage string
	// BuilderImages pins builder images by "<builder>/<runtime>"; a runtime without an
	// entry keeps the func library's default.
	BuilderImages map[string]string
}

// BuildRetryDelay is the backoff after the given number of consecutive failures.
func (c Config) BuildRetryDelay(failures int32) time.Duration {
	d := c.BuildBackoff
	for i := int32(1); i < failures && d < c.BuildBackoffMax; i++ {
		d *= 2
	}
	if d > c.BuildBackoffMax {
		d = c.BuildBackoffMax
	}
	return d
}

// Defaults returns the configuration used when the ConfigMap is absent.
func Defaults() Config {
	return Config{
		CheckInterval:           DefaultCheckInterval,
		GitTimeout:              DefaultGitTimeout,
		AutoUpdateMiddleware:    true,
		UnknownMiddlewarePolicy: UnknownMiddlewareOutdated,
		MaxConcurrentBuilds:     DefaultMaxConcurrentBuilds,
		BuildBackoff:            DefaultBuildBackoff,
		BuildBackoffMax:         DefaultBuildBackoffMax,
		PipelineServiceAccount:  DefaultPipelineServiceAccount,
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
		KeyCheckInterval:   {&c.CheckInterval, MinCheckInterval},
		KeyGitTimeout:      {&c.GitTimeout, time.Second},
		KeyBuildBackoff:    {&c.BuildBackoff, time.Second},
		KeyBuildBackoffMax: {&c.BuildBackoffMax, time.Second},
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
	if v, ok := cm.Data[KeyMaxConcurrentBuilds]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("key %s: %q is not a whole number of 0 or more", KeyMaxConcurrentBuilds, v))
		} else {
			c.MaxConcurrentBuilds = n
		}
	}
	if c.BuildBackoffMax < c.BuildBackoff {
		errs = append(errs, fmt.Errorf("key %s: %s is shorter than %s %s", KeyBuildBackoffMax, c.BuildBackoffMax, KeyBuildBackoff, c.BuildBackoff))
		c.BuildBackoffMax = c.BuildBackoff
	}
	if v, ok := cm.Data[KeyPipelineServiceAccount]; ok {
		switch sa := strings.TrimSpace(v); {
		case sa == "default":
			errs = append(errs, fmt.Errorf("key %s: builds never run as the ServiceAccount \"default\", which ordinary pods use", KeyPipelineServiceAccount))
		case validation.IsDNS1123Subdomain(sa) == nil:
			c.PipelineServiceAccount = sa
		default:
			errs = append(errs, fmt.Errorf("key %s: %q is not a ServiceAccount name", KeyPipelineServiceAccount, v))
		}
	}
	if v, ok := cm.Data[KeyDeployerImage]; ok {
		if img := strings.TrimSpace(v); validImage(img) {
			c.DeployerImage = img
		} else {
			errs = append(errs, fmt.Errorf("key %s: %q is not an image reference", KeyDeployerImage, v))
		}
	}
	for k, v := range cm.Data {
		rest, ok := strings.CutPrefix(k, KeyBuilderImagePrefix)
		if !ok {
			continue
		}
		builder, runtime, ok := strings.Cut(rest, ".")
		img := strings.TrimSpace(v)
		switch {
		case !ok || (builder != "pack" && builder != "s2i") || runtime == "":
			errs = append(errs, fmt.Errorf("key %s: name it %s<pack|s2i>.<runtime>", k, KeyBuilderImagePrefix))
		case !validImage(img):
			errs = append(errs, fmt.Errorf("key %s: %q is not an image reference", k, v))
		default:
			if c.BuilderImages == nil {
				c.BuilderImages = map[string]string{}
			}
			c.BuilderImages[builder+"/"+runtime] = img
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return c, errors.Join(errs...)
}

// validImage is true for an image reference such as registry/repo:tag or repo@sha256:....
func validImage(s string) bool {
	_, err := name.ParseReference(s)
	return s != "" && err == nil
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
