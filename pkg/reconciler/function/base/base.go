// Package base checks a Function against its base policy: whether the base its
// running image was built on (a buildpacks run image, an s2i builder image) moved
// on, shown in status.base and condition BaseUpToDate, and whether an update is due
// (build.Base, which the build sub-reconciler turns into a rebase or a rebuild).
//
// It also holds RebaseJob, the build.Rebaser a Base build of a buildpacks image runs:
// pkg/rebase, then pkg/imagedeploy as the namespace's build ServiceAccount.
//
// The check reads images only through an Inspector (registry.Inspector: the network
// guard, the read limits, the per-credentials cache) and writes nothing but the
// Function's status. The package must not import the function reconciler.
package base

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/registry"
)

// Inspector reads what an image records of its base, and what a base's reference
// points to now (registry.Inspector).
type Inspector interface {
	Inspect(ctx context.Context, ref string, kc authn.Keychain) (registry.Middleware, error)
	Base(ctx context.Context, ref string, kc authn.Keychain) (registry.BaseImage, error)
}

// Deps is what the base policy's check reads through.
type Deps struct {
	Inspector Inspector
	// Lanes keeps one registry from holding every worker; nil: no bound.
	Lanes  *lanes.Lanes
	Config *config.Store
	// Clock is the real one when nil.
	Clock clock.PassiveClock
}

// Checker checks Functions against their base policy.
type Checker struct {
	Deps
}

// New returns the Checker of d.
func New(d Deps) *Checker {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	return &Checker{Deps: d}
}

// Input is what the checks before this one observed.
type Input struct {
	// Image is the image the function runs (by digest when a Revision resolved it).
	Image string
	// Keychain holds the Function's registry credentials (spec.registry.authSecretRef).
	Keychain authn.Keychain
	// Timeout bounds each registry read (registryTimeout).
	Timeout time.Duration
}

// Check reads the base of in.Image and what its reference points to now, and decides
// whether the function is to be updated. Reading may fail without failing the check:
// BaseUpToDate says so, and nothing else of the Function depends on it. It returns
// lanes.Busy when the registry's lane is full (the reconcile comes back shortly).
func (c *Checker) Check(ctx context.Context, fn *v1alpha1.Function, in Input) (build.Base, error) {
	var out build.Base
	cfg := c.Config.Load()
	settings := fn.Settings()
	policy, source := settings.BaseUpdates(cfg.Base.Updates)
	if policy == v1alpha1.BaseUpdatesOff || in.Image == "" {
		fn.Status.ClearBase()
		return out, nil
	}
	st := fn.Status.Base
	if st == nil {
		st = &v1alpha1.BaseStatus{}
		fn.Status.Base = st
	}
	st.Policy, st.PolicySource = policy, source

	got, err := within(ctx, c, fn.Namespace, in.Image, in.Timeout, func(ctx context.Context) (registry.Middleware, error) {
		return c.Inspector.Inspect(ctx, in.Image, in.Keychain)
	})
	if lanes.IsHostBusy(err) {
		return out, err
	}
	if err != nil {
		st.Current, st.Available = "", ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseUnreachable, "the running image %s cannot be read: %s", in.Image, err)
		return out, nil
	}
	b := got.Base
	st.Kind, st.Image = b.Kind, b.Image
	switch {
	case b.Kind == "":
		st.Current, st.Available, st.ResolvedFrom = "", "", ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseUnknown,
			"the running image %s records no base the operator can read: neither buildpacks' label %s nor s2i's %s",
			in.Image, registry.LabelLifecycleMetadata, registry.LabelS2IBuilder)
		return out, nil
	case b.Problem != "":
		st.Current, st.Available, st.ResolvedFrom = "", "", ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseLabelInvalid, "the running image %s: %s; its base is not guessed", in.Image, b.Problem)
		return out, nil
	}

	// The label's own mirrors are not read: a tenant's label does not choose where
	// the operator reads (and a rebase copies layers) from; the ConfigMap's do.
	candidates := registry.Candidates(registry.Base{Kind: b.Kind, Image: b.Image}, cfg.Base.Mirrors)
	now, found, from, err := c.Clock.Now(), registry.BaseImage{}, "", error(nil)
	for _, ref := range candidates {
		found, err = within(ctx, c, fn.Namespace, ref, in.Timeout, func(ctx context.Context) (registry.BaseImage, error) {
			return c.Inspector.Base(ctx, ref, in.Keychain)
		})
		if lanes.IsHostBusy(err) {
			return out, err
		}
		if err == nil {
			from = ref
			break
		}
	}
	if err != nil {
		st.Available, st.ResolvedFrom = "", ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseUnreachable, "the base %s of the running image cannot be read: %s%s",
			b.Image, err, mirrorHint(cfg))
		return out, nil
	}
	available, resolvedFrom := digestRef(b.Image, found.Digest), ""
	if from != b.Image {
		resolvedFrom = from
	}
	if len(available) > maxStatusName || len(resolvedFrom) > maxStatusName || len(b.Reference) > maxStatusName {
		st.Current, st.Available, st.ResolvedFrom = "", "", ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseLabelInvalid, "the running image names its base %s, longer than the %d characters status.base holds", b.Image, maxStatusName)
		return out, nil
	}
	// Written when what it says changes, or once per check interval: not each check.
	if st.Available != available || st.LastChecked == nil || now.Sub(st.LastChecked.Time) >= cfg.Base.CheckInterval {
		st.LastChecked = &metav1.Time{Time: now}
	}
	st.Available, st.ResolvedFrom = available, resolvedFrom
	moved, ok := b.Moved(found)
	if !ok {
		st.Current = ""
		fn.Status.MarkBaseUnknown(v1alpha1.ReasonBaseUnknown, "the base %s read from %s cannot be compared with the running image (%s against %s: bases are read for linux/amd64)",
			b.Image, from, orUnknownPlatform(found.Platform), orUnknownPlatform(b.Platform))
		return out, nil
	}
	st.Current = b.Reference // a buildpacks image records its run image by digest
	if b.Kind == v1alpha1.BaseKindBuilder {
		// An s2i image records its builder by tag only: it is on the current one when
		// it starts with the builder's layers.
		st.Current = ""
		if !moved {
			st.Current = st.Available
		}
	}
	out = build.Base{Rebase: b.Kind == v1alpha1.BaseKindRunImage, Image: b.Image, Current: st.Current, Available: st.Available,
		RunImage: digestRef(from, found.Digest), RunImageName: b.Image}
	if !moved {
		fn.Status.MarkBaseUpToDate("the running image is on %s as %s points to it now", shortDigest(st.Available), b.Image)
		return out, nil
	}
	c.decide(fn, &out, b, policy, source, now)
	return out, nil
}

// decide words a base that moved on, by what the policy, func.yaml, the settings and
// the maintenance window let happen, and marks out Due when an update may start.
func (c *Checker) decide(fn *v1alpha1.Function, out *build.Base, b registry.Base, policy, source string, now time.Time) {
	cfg, st, settings := c.Config.Load(), fn.Status.Base, fn.Settings()
	what := "rebuilt from its deployed commit through func's pipeline"
	if out.Rebase {
		what = "rebased onto it in place"
	}
	moving := fmt.Sprintf("%s points to %s now (the running image is on %s)", b.Image, shortDigest(st.Available), orOlder(st.Current))
	switch {
	case fn.Status.ManagementDisabled():
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonManagementDisabled, "%s, but func.yaml sets deploy.managementDisabled: it is not updated", moving)
	case settings.HoldRebuilds:
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonRebuildsHeld, "%s, but an invalid settings annotation holds every rebuild (condition SettingsValid)", moving)
	case policy == v1alpha1.BaseUpdatesReport:
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonBaseReportOnly, "%s; the base policy %s (set by %s) reports it only: with %s or %s it would be %s",
			moving, policy, source, v1alpha1.BaseUpdatesRebase, v1alpha1.BaseUpdatesRebaseAndRebuild, what)
	case !out.Rebase && policy == v1alpha1.BaseUpdatesRebase:
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonBaseReportOnly, "%s; an s2i image cannot be rebased, and the base policy %s (set by %s) does not rebuild: set %s to rebuild it",
			moving, policy, source, v1alpha1.BaseUpdatesRebaseAndRebuild)
	case cfg.Base.Holds(v1alpha1.BuildCauseBase) && !cfg.Base.Window.Open(now):
		next := cfg.Base.Window.NextOpen(now)
		out.NotBefore = next
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonOutsideMaintenanceWindow, "%s; it will be %s once the maintenance window %q opens, at %s (ConfigMap %s, key %s)",
			moving, what, cfg.Base.Window, next.UTC().Format(time.RFC3339), config.ConfigMapName, config.KeyMaintenanceWindow)
	default:
		out.Due = true
		fn.Status.MarkBaseOutdated(v1alpha1.ReasonBaseOutdated, "%s: the function is being %s (status.build)", moving, what)
	}
}

// within runs read of ref in its registry's lane for namespace, within timeout.
func within[T any](ctx context.Context, c *Checker, namespace, ref string, timeout time.Duration, read func(ctx context.Context) (T, error)) (v T, err error) {
	host := lanes.RegistryHost(ref)
	leave, ok := c.Lanes.Enter(host, namespace) // nil Lanes: no bound
	if !ok {
		return v, lanes.Busy(host)
	}
	defer func() {
		var unreachable *registry.UnreachableError
		leave(errors.As(err, &unreachable) && unreachable.TimedOut)
	}()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return read(ctx)
}

// digestRef is image's repository at digest.
func digestRef(image, digest string) string {
	r, err := name.ParseReference(image)
	if err != nil || digest == "" {
		return ""
	}
	return r.Context().Name() + "@" + digest
}

func shortDigest(ref string) string {
	_, d, ok := strings.Cut(ref, "@")
	if !ok {
		return ref
	}
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// maxStatusName is the longest image reference status.base holds (the CRD's bound).
const maxStatusName = 512

func orUnknownPlatform(p string) string {
	if p == "" {
		return "an unknown platform"
	}
	return p
}

func orOlder(s string) string {
	if s == "" {
		return "an older one"
	}
	return shortDigest(s)
}

func mirrorHint(cfg config.Config) string {
	if len(cfg.Base.Mirrors) > 0 {
		return ""
	}
	return fmt.Sprintf("; a cluster that cannot reach that registry reads a mirror (ConfigMap %s, key %s)", config.ConfigMapName, config.KeyBaseImageMirrors)
}
