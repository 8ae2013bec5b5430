package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// ConfigMapName is the name of the operator's ConfigMap, in its system namespace.
const ConfigMapName = "func-operator-config"

// Keys of the ConfigMap.
const (
	// KeyCheckInterval is how often every Function is checked again (a Go duration).
	KeyCheckInterval = "checkInterval"
	// KeyGitTimeout bounds each git operation: listing the branches, or a clone.
	KeyGitTimeout = "gitTimeout"
	// KeyRegistryTimeout bounds each read of a function's image from its registry: a
	// registry slower than that counts as unreachable (RegistryReachable False), and
	// never holds one of the operator's workers longer.
	KeyRegistryTimeout = "registryTimeout"
	// KeyAutoUpdateMiddleware says whether outdated middleware is rebuilt ("true" or
	// "false"), for Functions without spec.autoUpdateMiddleware.
	KeyAutoUpdateMiddleware = "autoUpdateMiddleware"
	// KeyUnknownMiddlewarePolicy says how a function whose image tells no middleware
	// version counts: "Outdated" (as upstream func does) or "UpToDate".
	KeyUnknownMiddlewarePolicy = "unknownMiddlewarePolicy"
	// KeyRebuildCommit says which commit a rebuild builds, for Functions without
	// annotation functions.dev/rebuild-commit: "Deployed" (the commit the running
	// image was built from; the followed one when the image names none),
	// "DeployedOnly" (the deployed commit, or no rebuild) or "Followed" (the commit
	// the followed reference points at).
	KeyRebuildCommit = "rebuildCommit"
	// KeyDeployOnCommit says whether a new commit on the followed reference that
	// changes a function's directory is built and deployed ("true" or "false"), for
	// Functions without annotation functions.dev/deploy-on-commit.
	KeyDeployOnCommit = "deployOnCommit"
	// KeyMinSourceBuildInterval is the least time between two builds of one Function
	// for new commits (a Go duration): a burst of pushes builds the newest commit once
	// the interval is over, not each.
	KeyMinSourceBuildInterval = "minSourceBuildInterval"
	// KeyMaxConcurrentBuilds is how many rebuilds may run at once, cluster-wide; the
	// others wait in a fair queue. 0 pauses rebuilds.
	KeyMaxConcurrentBuilds = "maxConcurrentBuilds"
	// KeyMaxConcurrentBuildsPerNamespace is how many of those one namespace may run:
	// a whole number of 1 or more, or a percentage of maxConcurrentBuilds (rounded
	// up, at least 1), so that namespaces whose builds hang until buildTimeout cannot
	// hold every slot.
	KeyMaxConcurrentBuildsPerNamespace = "maxConcurrentBuildsPerNamespace"
	// KeyBuildBackoff is how long a failed rebuild waits before its first retry; the
	// wait doubles with every further failure.
	KeyBuildBackoff = "buildBackoff"
	// KeyBuildBackoffMax caps the wait between retries of a failing rebuild.
	KeyBuildBackoffMax = "buildBackoffMax"
	// KeyOutageGrace is how long an outage of a Function's git host or registry leaves
	// its last known good state standing: SourceReachable / RegistryReachable is False
	// (severity Warning) but Ready is unchanged. Past it, SourceReady /
	// MiddlewareUpToDate show the failure.
	KeyOutageGrace = "outageGrace"
	// KeyBuildTimeout is how long a rebuild may run, from its launch: a run that has
	// not finished by then (no Tekton controller, a task that never resolves) is
	// deleted, the build fails, and its slot of the budget is freed.
	KeyBuildTimeout = "buildTimeout"
	// KeyPipelineServiceAccount is the ServiceAccount the build PipelineRuns run as in
	// each function namespace; a namespace admin creates it and binds it to the
	// func-operator-builder ClusterRole (config/namespace/onboard.yaml). It is never
	// "default": ordinary pods run as that one.
	KeyPipelineServiceAccount = "pipelineServiceAccount"
	// KeyDeployerImage is the image of the pipeline's scaffold and deploy steps
	// (func-utils). It is read when the operator starts.
	KeyDeployerImage = "deployerImage"
	// KeyGitCloneImage is the image of the pipeline's clone step (the git-clone task
	// the operator embeds). It is read when the operator starts.
	KeyGitCloneImage = "gitCloneImage"
	// KeyBashImage is the image of the pack task's prepare and results steps, which
	// func names by tag (docker.io/library/bash:5.1); empty keeps it. Read at each build.
	KeyBashImage = "bashImage"
	// KeyBuildahImage is the image of the s2i task's build step, which func names by
	// tag (quay.io/buildah/stable:v1.31.0); empty keeps it. Read at each build.
	KeyBuildahImage = "buildahImage"
	// KeyBuilderImagePrefix prefixes the keys builderImage.<builder>.<runtime> (builder
	// pack or s2i) that pin the builder image of a runtime. A builder image that the
	// function's func.yaml names (build.builderImages) wins.
	KeyBuilderImagePrefix = "builderImage."

	// KeyCloneMaxBytes caps the bytes one clone (or branch listing) of a Function's
	// repository may transfer (a quantity: 100Mi); a larger one is stopped while it
	// streams, with reason CloneTooLarge.
	KeyCloneMaxBytes = "cloneMaxBytes"
	// KeyCloneMaxFiles caps the objects (files, directories, the commit) one clone
	// may hold; past it, reason CloneTooManyFiles.
	KeyCloneMaxFiles = "cloneMaxFiles"
	// KeyCloneMaxObjectBytes caps what one object of a clone may expand to (go-git
	// holds an object whole while it indexes the pack); past it, or when all the
	// objects expand to more than 4 times cloneMaxBytes, reason CloneTooLarge.
	KeyCloneMaxObjectBytes = "cloneMaxObjectBytes"
	// KeyCommitStoreMaxBytes caps the memory that what was fetched of recent commits
	// takes (their trees and every func.yaml: what every Function on a commit reads
	// from its one transfer); past it the least recently used commit is dropped, and
	// fetched again when a Function needs it.
	KeyCommitStoreMaxBytes = "commitStoreMaxBytes"
	// KeyInspectMaxMemory caps the memory one image inspection may hold: a manifest,
	// a config, or the build information of an executable larger than that is not
	// read (reason ImageTooLarge). Executables are streamed, never held whole.
	KeyInspectMaxMemory = "inspectMaxMemory"
	// KeyInspectMaxBytes caps the bytes of an image's layers read, once uncompressed,
	// in one inspection: a layer that expands past it (a zip bomb) stops the read
	// (reason ImageTooLarge).
	KeyInspectMaxBytes = "inspectMaxBytes"
	// KeyConditionMessageMaxBytes caps the message of each condition; a longer one is
	// cut, and says so.
	KeyConditionMessageMaxBytes = "conditionMessageMaxBytes"
	// KeyEventMessageMaxBytes caps the message of each Event the operator records.
	KeyEventMessageMaxBytes = "eventMessageMaxBytes"
	// KeyBuildLogLines is how many lines of a failed build step's log are kept, in
	// the operator's log only; each line is cut at 512 bytes.
	KeyBuildLogLines = "buildLogLines"
	// KeyHostAllow lists the only hosts a Function's repository and image may be
	// read from (comma or newline separated: names, *.domains, addresses, ranges,
	// address:port); empty allows every host the deny list does not refuse.
	KeyHostAllow = "hostAllow"
	// KeyHostDeny lists hosts refused on top of the built-in ones (link-local and
	// cloud metadata addresses, the cluster's API server).
	KeyHostDeny = "hostDeny"
)

// Values of KeyUnknownMiddlewarePolicy.
const (
	UnknownMiddlewareOutdated = "Outdated"
	UnknownMiddlewareUpToDate = "UpToDate"
)

// Defaults of the keys.
const (
	DefaultCheckInterval   = 5 * time.Minute
	DefaultGitTimeout      = 60 * time.Second
	DefaultRegistryTimeout = 60 * time.Second
	// MinCheckInterval keeps a typo from hammering every git server.
	MinCheckInterval = 10 * time.Second

	DefaultMaxConcurrentBuilds = 2
	// DefaultMaxConcurrentBuildsPerNamespace is half the slots: of the default two, one.
	DefaultMaxConcurrentBuildsPerNamespace = "50%"
	DefaultBuildBackoff                    = time.Minute
	// DefaultMinSourceBuildInterval is minSourceBuildInterval's default: pushes
	// minutes apart each deploy, a burst deploys its newest commit.
	DefaultMinSourceBuildInterval = 2 * time.Minute
	DefaultBuildBackoffMax        = time.Hour
	DefaultBuildTimeout           = time.Hour
	DefaultOutageGrace            = 30 * time.Minute
	DefaultPipelineServiceAccount = "func-operator-builder"

	DefaultCloneMaxBytes            = 100 << 20
	DefaultCloneMaxFiles            = 100000
	DefaultCloneMaxObjectBytes      = 32 << 20
	DefaultCommitStoreMaxBytes      = 64 << 20
	DefaultInspectMaxMemory         = 16 << 20
	DefaultInspectMaxBytes          = 4 << 30
	DefaultConditionMessageMaxBytes = 1024
	DefaultEventMessageMaxBytes     = 1024
	DefaultBuildLogLines            = 20
)

// Config is the operator-wide configuration.
type Config struct {
	// CheckInterval is how often every Function is reconciled again, jittered by up to 10%.
	CheckInterval time.Duration
	// GitTimeout bounds each git operation.
	GitTimeout time.Duration
	// RegistryTimeout bounds each read of an image.
	RegistryTimeout time.Duration
	// AutoUpdateMiddleware is the default for Functions without spec.autoUpdateMiddleware.
	AutoUpdateMiddleware bool
	// UnknownMiddlewarePolicy is UnknownMiddlewareOutdated or UnknownMiddlewareUpToDate.
	UnknownMiddlewarePolicy string
	// RebuildCommit is the rebuild-commit policy of Functions without annotation
	// functions.dev/rebuild-commit: v1alpha1.RebuildCommitDeployed, ...DeployedOnly
	// or ...Followed.
	RebuildCommit string
	// DeployOnCommit is the default source policy of Functions without annotation
	// functions.dev/deploy-on-commit: build and deploy a new commit that changes the
	// function.
	DeployOnCommit bool
	// MinSourceBuildInterval is the least time between two source builds of a Function.
	MinSourceBuildInterval time.Duration
	// MaxConcurrentBuilds is how many rebuilds may run at once, cluster-wide.
	MaxConcurrentBuilds int
	// MaxConcurrentBuildsPerNamespace is how many of them one namespace may run: a
	// number, or a percentage of MaxConcurrentBuilds (BuildsPerNamespace).
	MaxConcurrentBuildsPerNamespace intstr.IntOrString
	// BuildBackoff is the wait before the first retry of a failed rebuild.
	BuildBackoff time.Duration
	// BuildBackoffMax caps the wait between retries.
	BuildBackoffMax time.Duration
	// BuildTimeout is how long a rebuild may run before it is stopped and failed.
	BuildTimeout time.Duration
	// OutageGrace is how long the last known good state stands while the git host or
	// the registry does not answer.
	OutageGrace time.Duration
	// PipelineServiceAccount is the ServiceAccount build PipelineRuns run as.
	PipelineServiceAccount string
	// DeployerImage overrides the func-utils image of the pipeline; empty keeps the
	// func library's.
	DeployerImage string
	// GitCloneImage overrides the image of the clone step; empty keeps the embedded
	// git-clone task's.
	GitCloneImage string
	// BashImage and BuildahImage override the images func's tasks name by tag (the
	// pack task's bash steps, the s2i task's buildah step); empty keeps func's.
	BashImage, BuildahImage string
	// BuilderImages pins builder images by "<builder>/<runtime>"; a runtime without an
	// entry keeps the func library's default.
	BuilderImages map[string]string

	// CloneMaxBytes, CloneMaxFiles and CloneMaxObjectBytes bound one clone.
	CloneMaxBytes, CloneMaxFiles, CloneMaxObjectBytes int64
	// CommitStoreMaxBytes bounds what is kept of the commits fetched.
	CommitStoreMaxBytes int64
	// InspectMaxMemory and InspectMaxBytes bound one image inspection.
	InspectMaxMemory, InspectMaxBytes int64
	// ConditionMessageMaxBytes and EventMessageMaxBytes cap messages.
	ConditionMessageMaxBytes, EventMessageMaxBytes int
	// BuildLogLines is how many lines of a failed step's log are kept.
	BuildLogLines int
	// HostAllow and HostDeny are the configured entries of the network policy.
	HostAllow, HostDeny []string
	// Events are the settings of the CloudEvents sent for outcomes (events.go).
	Events Events
	// Base is the configuration of base updates (base.go).
	Base Base
}

// BuildRetryDelay is the backoff after the given number of consecutive failures:
// BuildBackoff, doubled for each failure after the first, at most BuildBackoffMax.
func (c Config) BuildRetryDelay(failures int32) time.Duration {
	b := wait.Backoff{Duration: c.BuildBackoff, Factor: 2, Steps: math.MaxInt32, Cap: c.BuildBackoffMax}
	d := b.Step()
	for i := int32(1); i < failures && d < c.BuildBackoffMax; i++ {
		d = b.Step()
	}
	if d < 0 {
		return 0 // overflowed (a cap past 2^62 ns): retry now, as the doubling by hand did
	}
	// Cap bounds the steps after the first only.
	return min(d, c.BuildBackoffMax)
}

// BuildsPerNamespace is how many rebuilds one namespace may run at once:
// MaxConcurrentBuildsPerNamespace, a percentage of MaxConcurrentBuilds rounded up;
// at least 1 and at most MaxConcurrentBuilds.
func (c Config) BuildsPerNamespace() int {
	v := c.MaxConcurrentBuildsPerNamespace
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, c.MaxConcurrentBuilds, true)
	if err != nil || n < 1 {
		n = 1 // parsePerNamespace lets no such value through
	}
	return min(n, max(c.MaxConcurrentBuilds, 1))
}

// parseBuildBudget reads maxConcurrentBuilds and maxConcurrentBuildsPerNamespace.
func parseBuildBudget(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) {
	if v, ok := cm.Data[KeyMaxConcurrentBuilds]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			fail(KeyMaxConcurrentBuilds, fmt.Errorf("key %s: %q is not a whole number of 0 or more", KeyMaxConcurrentBuilds, v))
		} else {
			c.MaxConcurrentBuilds = n
		}
	}
	if v, ok := cm.Data[KeyMaxConcurrentBuildsPerNamespace]; ok {
		if n, err := parsePerNamespace(v); err != nil {
			fail(KeyMaxConcurrentBuildsPerNamespace, err)
		} else {
			c.MaxConcurrentBuildsPerNamespace = n
		}
	}
}

// parsePerNamespace reads maxConcurrentBuildsPerNamespace: a whole number of 1 or
// more, or a percentage from 1% to 100%.
func parsePerNamespace(v string) (intstr.IntOrString, error) {
	t := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= 100 && !strings.HasPrefix(p, "+") && !strings.HasPrefix(p, "-") {
			return intstr.FromString(strconv.Itoa(n) + "%"), nil
		}
	} else if n, err := strconv.Atoi(t); err == nil && n >= 1 {
		return intstr.FromInt32(int32(min(n, math.MaxInt32))), nil
	}
	return intstr.IntOrString{}, fmt.Errorf("key %s: %q is not a whole number of 1 or more, nor a percentage from 1%% to 100%%",
		KeyMaxConcurrentBuildsPerNamespace, v)
}

// Defaults returns the configuration used when the ConfigMap is absent.
func Defaults() Config {
	return Config{
		CheckInterval:                   DefaultCheckInterval,
		GitTimeout:                      DefaultGitTimeout,
		RegistryTimeout:                 DefaultRegistryTimeout,
		AutoUpdateMiddleware:            true,
		UnknownMiddlewarePolicy:         UnknownMiddlewareOutdated,
		RebuildCommit:                   v1alpha1.RebuildCommitDeployed,
		MinSourceBuildInterval:          DefaultMinSourceBuildInterval,
		MaxConcurrentBuilds:             DefaultMaxConcurrentBuilds,
		MaxConcurrentBuildsPerNamespace: intstr.FromString(DefaultMaxConcurrentBuildsPerNamespace),
		BuildBackoff:                    DefaultBuildBackoff,
		BuildBackoffMax:                 DefaultBuildBackoffMax,
		BuildTimeout:                    DefaultBuildTimeout,
		OutageGrace:                     DefaultOutageGrace,
		PipelineServiceAccount:          DefaultPipelineServiceAccount,

		CloneMaxBytes:            DefaultCloneMaxBytes,
		CloneMaxFiles:            DefaultCloneMaxFiles,
		CloneMaxObjectBytes:      DefaultCloneMaxObjectBytes,
		CommitStoreMaxBytes:      DefaultCommitStoreMaxBytes,
		InspectMaxMemory:         DefaultInspectMaxMemory,
		InspectMaxBytes:          DefaultInspectMaxBytes,
		ConditionMessageMaxBytes: DefaultConditionMessageMaxBytes,
		EventMessageMaxBytes:     DefaultEventMessageMaxBytes,
		BuildLogLines:            DefaultBuildLogLines,
		Events:                   DefaultEvents(),
		Base:                     DefaultBase(),
	}
}

// ExampleKey holds the documented example in the shipped ConfigMap; it sets nothing.
const ExampleKey = "_example"

// Start is the last good configuration the operator assumes before it read the
// ConfigMap once: the defaults, except that rebuilds are off, so that a value that
// is invalid from the start never turns them on, and they build only the deployed
// commit, so that an invalid rebuildCommit never ships a commit that was not
// deployed. A key that is absent has its default (rebuilds on, RebuildCommit
// Deployed); only an invalid one falls back to Start.
func Start() Config {
	c := Defaults()
	c.AutoUpdateMiddleware = false
	c.RebuildCommit = v1alpha1.RebuildCommitDeployedOnly
	return c
}

// FromConfigMap reads the configuration from cm (nil means absent) as the operator
// does at start: Update from Start, with every problem in one error.
func FromConfigMap(cm *corev1.ConfigMap) (Config, error) {
	c, invalid, unknown := Update(Start(), cm)
	invalid = append(invalid, UnknownKeys(unknown)...)
	sort.Slice(invalid, func(i, j int) bool { return invalid[i].Error() < invalid[j].Error() })
	return c, errors.Join(invalid...)
}

// UnknownKeys says, for each key the operator does not know, what is wrong with it.
func UnknownKeys(keys []string) []error {
	errs := make([]error, len(keys))
	for i, k := range keys {
		if strings.HasPrefix(k, KeyBuilderImagePrefix) {
			errs[i] = fmt.Errorf("key %s: name it %s<pack|s2i>.<runtime>", k, KeyBuilderImagePrefix)
		} else if strings.HasPrefix(k, KeyEventSinkPrefix) {
			errs[i] = fmt.Errorf("key %s: name it %s<namespace>", k, KeyEventSinkPrefix)
		} else {
			errs[i] = fmt.Errorf("key %s: unknown, and ignored (misspelt?)", k)
		}
	}
	return errs
}

// keepers copy, for each key, its value from the last good configuration.
var keepers = map[string]func(c *Config, last Config){
	KeyCheckInterval:           func(c *Config, last Config) { c.CheckInterval = last.CheckInterval },
	KeyGitTimeout:              func(c *Config, last Config) { c.GitTimeout = last.GitTimeout },
	KeyRegistryTimeout:         func(c *Config, last Config) { c.RegistryTimeout = last.RegistryTimeout },
	KeyAutoUpdateMiddleware:    func(c *Config, last Config) { c.AutoUpdateMiddleware = last.AutoUpdateMiddleware },
	KeyUnknownMiddlewarePolicy: func(c *Config, last Config) { c.UnknownMiddlewarePolicy = last.UnknownMiddlewarePolicy },
	KeyRebuildCommit:           func(c *Config, last Config) { c.RebuildCommit = last.RebuildCommit },
	KeyDeployOnCommit:          func(c *Config, last Config) { c.DeployOnCommit = last.DeployOnCommit },
	KeyMinSourceBuildInterval: func(c *Config, last Config) {
		c.MinSourceBuildInterval = last.MinSourceBuildInterval
	},
	KeyMaxConcurrentBuilds: func(c *Config, last Config) { c.MaxConcurrentBuilds = last.MaxConcurrentBuilds },
	KeyMaxConcurrentBuildsPerNamespace: func(c *Config, last Config) {
		c.MaxConcurrentBuildsPerNamespace = last.MaxConcurrentBuildsPerNamespace
	},
	KeyBuildBackoff:           func(c *Config, last Config) { c.BuildBackoff = last.BuildBackoff },
	KeyBuildBackoffMax:        func(c *Config, last Config) { c.BuildBackoffMax = last.BuildBackoffMax },
	KeyBuildTimeout:           func(c *Config, last Config) { c.BuildTimeout = last.BuildTimeout },
	KeyOutageGrace:            func(c *Config, last Config) { c.OutageGrace = last.OutageGrace },
	KeyPipelineServiceAccount: func(c *Config, last Config) { c.PipelineServiceAccount = last.PipelineServiceAccount },
	KeyDeployerImage:          func(c *Config, last Config) { c.DeployerImage = last.DeployerImage },
	KeyGitCloneImage:          func(c *Config, last Config) { c.GitCloneImage = last.GitCloneImage },
	KeyBashImage:              func(c *Config, last Config) { c.BashImage = last.BashImage },
	KeyBuildahImage:           func(c *Config, last Config) { c.BuildahImage = last.BuildahImage },

	KeyCloneMaxBytes:            func(c *Config, last Config) { c.CloneMaxBytes = last.CloneMaxBytes },
	KeyCloneMaxFiles:            func(c *Config, last Config) { c.CloneMaxFiles = last.CloneMaxFiles },
	KeyCloneMaxObjectBytes:      func(c *Config, last Config) { c.CloneMaxObjectBytes = last.CloneMaxObjectBytes },
	KeyCommitStoreMaxBytes:      func(c *Config, last Config) { c.CommitStoreMaxBytes = last.CommitStoreMaxBytes },
	KeyInspectMaxMemory:         func(c *Config, last Config) { c.InspectMaxMemory = last.InspectMaxMemory },
	KeyInspectMaxBytes:          func(c *Config, last Config) { c.InspectMaxBytes = last.InspectMaxBytes },
	KeyConditionMessageMaxBytes: func(c *Config, last Config) { c.ConditionMessageMaxBytes = last.ConditionMessageMaxBytes },
	KeyEventMessageMaxBytes:     func(c *Config, last Config) { c.EventMessageMaxBytes = last.EventMessageMaxBytes },
	KeyBuildLogLines:            func(c *Config, last Config) { c.BuildLogLines = last.BuildLogLines },
	KeyHostAllow:                func(c *Config, last Config) { c.HostAllow = last.HostAllow },
	KeyHostDeny:                 func(c *Config, last Config) { c.HostDeny = last.HostDeny },
}

// Update reads the configuration from cm (nil means absent). A key that is absent
// has its default; a key whose value is invalid keeps its value in last, the last
// good configuration, and is named in invalid with why; a key the operator does not
// know is named in unknown (a misspelt key would otherwise go unseen).
func Update(last Config, cm *corev1.ConfigMap) (c Config, invalid []error, unknown []string) {
	c, bad, invalid, unknown := parse(cm)
	for _, k := range bad {
		if keep, ok := keepers[k]; ok {
			keep(&c, last)
			continue
		}
		if keepEventSink(k, &c, last) {
			continue
		}
		if rest, ok := strings.CutPrefix(k, KeyBuilderImagePrefix); ok {
			builder, runtime, _ := strings.Cut(rest, ".")
			if img, ok := last.BuilderImages[builder+"/"+runtime]; ok {
				if c.BuilderImages == nil {
					c.BuilderImages = map[string]string{}
				}
				c.BuilderImages[builder+"/"+runtime] = img
			}
		}
	}
	if c.BuildBackoffMax < c.BuildBackoff {
		invalid = append(invalid, fmt.Errorf("key %s: %s is shorter than %s %s", KeyBuildBackoffMax, c.BuildBackoffMax, KeyBuildBackoff, c.BuildBackoff))
		c.BuildBackoffMax = c.BuildBackoff
	}
	sort.Slice(invalid, func(i, j int) bool { return invalid[i].Error() < invalid[j].Error() })
	sort.Strings(unknown)
	return c, invalid, unknown
}

// parse reads cm over the defaults: the keys whose values are invalid are left at
// their defaults and listed in bad, with why in invalid.
func parse(cm *corev1.ConfigMap) (c Config, bad []string, invalid []error, unknown []string) {
	c = Defaults()
	if cm == nil {
		return c, nil, nil, nil
	}
	fail := func(k string, err error) {
		bad = append(bad, k)
		invalid = append(invalid, err)
	}
	for k := range cm.Data {
		if _, ok := keepers[k]; !ok && k != ExampleKey && !strings.HasPrefix(k, KeyBuilderImagePrefix) && !strings.HasPrefix(k, KeyEventSinkPrefix) {
			unknown = append(unknown, k)
		}
	}
	durations := map[string]struct {
		into *time.Duration
		min  time.Duration
	}{
		KeyCheckInterval:          {&c.CheckInterval, MinCheckInterval},
		KeyGitTimeout:             {&c.GitTimeout, time.Second},
		KeyRegistryTimeout:        {&c.RegistryTimeout, time.Second},
		KeyBuildBackoff:           {&c.BuildBackoff, time.Second},
		KeyBuildBackoffMax:        {&c.BuildBackoffMax, time.Second},
		KeyBuildTimeout:           {&c.BuildTimeout, 10 * time.Second},
		KeyOutageGrace:            {&c.OutageGrace, 0},
		KeyMinSourceBuildInterval: {&c.MinSourceBuildInterval, 0},
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
			fail(k, fmt.Errorf("key %s: %q is not a duration such as 5m or 90s", k, v))
		case d < durations[k].min:
			fail(k, fmt.Errorf("key %s: %s is shorter than the minimum %s", k, d, durations[k].min))
		default:
			*durations[k].into = d
		}
	}
	if v, ok := cm.Data[KeyAutoUpdateMiddleware]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			fail(KeyAutoUpdateMiddleware, fmt.Errorf("key %s: %q is not true or false", KeyAutoUpdateMiddleware, v))
		} else {
			c.AutoUpdateMiddleware = b
		}
	}
	if v, ok := cm.Data[KeyDeployOnCommit]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			fail(KeyDeployOnCommit, fmt.Errorf("key %s: %q is not true or false", KeyDeployOnCommit, v))
		} else {
			c.DeployOnCommit = b
		}
	}
	if v, ok := cm.Data[KeyUnknownMiddlewarePolicy]; ok {
		switch p := strings.TrimSpace(v); p {
		case UnknownMiddlewareOutdated, UnknownMiddlewareUpToDate:
			c.UnknownMiddlewarePolicy = p
		default:
			fail(KeyUnknownMiddlewarePolicy, fmt.Errorf("key %s: %q is neither %s nor %s",
				KeyUnknownMiddlewarePolicy, v, UnknownMiddlewareOutdated, UnknownMiddlewareUpToDate))
		}
	}
	if v, ok := cm.Data[KeyRebuildCommit]; ok {
		switch p := strings.TrimSpace(v); p {
		case v1alpha1.RebuildCommitDeployed, v1alpha1.RebuildCommitDeployedOnly, v1alpha1.RebuildCommitFollowed:
			c.RebuildCommit = p
		default:
			fail(KeyRebuildCommit, fmt.Errorf("key %s: %q is not %s, %s or %s", KeyRebuildCommit, v,
				v1alpha1.RebuildCommitDeployed, v1alpha1.RebuildCommitDeployedOnly, v1alpha1.RebuildCommitFollowed))
		}
	}
	parseBuildBudget(cm, &c, fail)
	if v, ok := cm.Data[KeyPipelineServiceAccount]; ok {
		switch sa := strings.TrimSpace(v); {
		case sa == "default":
			fail(KeyPipelineServiceAccount, fmt.Errorf("key %s: builds never run as the ServiceAccount \"default\", which ordinary pods use", KeyPipelineServiceAccount))
		case validation.IsDNS1123Subdomain(sa) == nil:
			c.PipelineServiceAccount = sa
		default:
			fail(KeyPipelineServiceAccount, fmt.Errorf("key %s: %q is not a ServiceAccount name", KeyPipelineServiceAccount, v))
		}
	}
	if v, ok := cm.Data[KeyDeployerImage]; ok {
		if img := strings.TrimSpace(v); validImage(img) {
			c.DeployerImage = img
		} else {
			fail(KeyDeployerImage, fmt.Errorf("key %s: %q is not an image reference", KeyDeployerImage, v))
		}
	}
	// Step images that may be empty: the embedded task's, or func's.
	for _, k := range []struct {
		key  string
		into *string
	}{{KeyGitCloneImage, &c.GitCloneImage}, {KeyBashImage, &c.BashImage}, {KeyBuildahImage, &c.BuildahImage}} {
		v, ok := cm.Data[k.key]
		if !ok {
			continue
		}
		if img := strings.TrimSpace(v); img == "" || validImage(img) {
			*k.into = img
		} else {
			fail(k.key, fmt.Errorf("key %s: %q is not an image reference", k.key, v))
		}
	}
	parseBounds(cm, &c, fail)
	parseHosts(cm, &c, fail)
	parseBase(cm, &c, fail)
	unknown = append(unknown, parseEvents(cm, &c, fail)...)
	unknown = append(unknown, parseBuilderImages(cm, &c, fail)...)
	return c, bad, invalid, unknown
}

// parseBuilderImages reads the builderImage.<builder>.<runtime> keys of cm into c,
// and returns the keys with that prefix that are not so formed.
func parseBuilderImages(cm *corev1.ConfigMap, c *Config, fail func(k string, err error)) (malformed []string) {
	for k, v := range cm.Data {
		rest, ok := strings.CutPrefix(k, KeyBuilderImagePrefix)
		if !ok {
			continue
		}
		builder, runtime, ok := strings.Cut(rest, ".")
		img := strings.TrimSpace(v)
		switch {
		case !ok || (builder != "pack" && builder != "s2i") || runtime == "":
			malformed = append(malformed, k)
		case !validImage(img):
			fail(k, fmt.Errorf("key %s: %q is not an image reference", k, v))
		default:
			if c.BuilderImages == nil {
				c.BuilderImages = map[string]string{}
			}
			c.BuilderImages[builder+"/"+runtime] = img
		}
	}
	return malformed
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
