package function

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/lanes"
	"github.com/fnops/func-operator/pkg/middleware"
	"github.com/fnops/func-operator/pkg/reconciler/function/step"
	"github.com/fnops/func-operator/pkg/registry"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/pkg/tenancy"
)

// ImageInspector tells which middleware and base an image was built with, and what a
// base's reference points to now (registry.Inspector).
type ImageInspector interface {
	Inspect(ctx context.Context, ref string, kc authn.Keychain) (registry.Middleware, error)
	Base(ctx context.Context, ref string, kc authn.Keychain) (registry.BaseImage, error)
}

// reconcileMiddleware compares the middleware the function runs (from the image
// obs.deployment.image, or from its own source) with the one a rebuild with the
// linked func library would bring, into obs.middleware.
func (r *Reconciler) reconcileMiddleware(ctx context.Context, fn *v1alpha1.Function, obs *observation) (Result, error) {
	cfg := r.config.Load()
	if fn.Status.Middleware == nil {
		fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
	}
	mw := fn.Status.Middleware
	mw.FuncVersion = funclib.Version()
	mw.AutoUpdate = autoUpdate(fn, cfg)

	runtime, invoke := obs.source.runtime, obs.source.invoke
	pin, err := funclib.AvailableMiddleware(runtime, invoke)
	if errors.Is(err, funclib.ErrNoMiddleware) {
		mw.Available, mw.PendingRebuild = "", false
		notRead(fn)
		fn.Status.MarkSourceManagedUpToDate(
			"func %s templates pin no middleware for runtime %s: its dependencies live in the function's own source; a rebuild cannot change them",
			mw.FuncVersion, runtime)
		obs.middleware = middlewareVerdict{from: unreadFrom(fn, cfg, obs.source.head.Commit)}
		return Result{}, nil
	}
	if err != nil {
		mw.Available, mw.PendingRebuild = "", false
		return Result{}, step.MarkedBy(fn.Status.MarkMiddlewareUnknown, rerror.NewStalling(v1alpha1.ReasonUnsupportedRuntime,
			"func %s has no template for runtime %q, invoke %q: %w", mw.FuncVersion, runtime, invoke, err))
	}
	mw.Available = pin.Version
	if pin.SourceManaged {
		mw.PendingRebuild = false
		notRead(fn)
		markSourceManaged(fn, runtime, pin)
		obs.middleware = middlewareVerdict{current: mw.Current, available: pin.Version, from: unreadFrom(fn, cfg, obs.source.head.Commit)}
		return Result{}, nil
	}
	if mw.CurrentSource == v1alpha1.MiddlewareSourceSource {
		mw.Current, mw.CurrentSource = "", "" // the runtime changed: the image tells now
	}

	// A failed read of the image leaves pendingRebuild as it was: nothing new is known.
	kc, readWith, err := r.registryKeychain(ctx, fn)
	if err != nil {
		return Result{}, err
	}
	obs.registry = kc // the base step reads the same image with it
	host := lanes.RegistryHost(obs.deployment.image)
	leave, ok := r.remote.lanes.Enter(host, fn.Namespace)
	if !ok {
		return Result{}, lanes.Busy(host)
	}
	got, err := r.inspect(ctx, obs.deployment.image, kc, cfg.RegistryTimeout, leave)
	if cannotRead(err) {
		return r.registryUnreachable(ctx, fn, obs.deployment.image, readWith, err)
	}
	if err != nil {
		return Result{}, inspectFailed(fn, err)
	}
	mw.RegistryUnreachableSince = nil
	fn.Status.MarkRegistryReachable()
	mw.Current, mw.CurrentSource, mw.Image, mw.ReadWith = got.Version, got.Source, obs.deployment.image, readWith
	if fn.Status.Deployment != nil {
		fn.Status.Deployment.Revision = got.Revision
	}
	from := decideRebuildFrom(fn, cfg, got.Revision, obs.source.head.Commit)
	mw.RebuildFrom = from.status()

	outcome, err := middleware.Compare(got.Version, pin.Version)
	if err != nil {
		return Result{}, step.MarkedBy(fn.Status.MarkMiddlewareUnknown, rerror.NewStalling(v1alpha1.ReasonImageInspectFailed, "comparing middleware versions: %w", err))
	}
	current := got.Version
	if outcome == middleware.Unknown {
		current = "unknown"
		outcome = middleware.Outdated
		if cfg.UnknownMiddlewarePolicy == config.UnknownMiddlewareUpToDate {
			outcome = middleware.UpToDate
		}
	}
	standDown := fn.Status.ManagementDisabled()
	mw.PendingRebuild = outcome == middleware.Outdated && mw.AutoUpdate.Enabled && !standDown
	switch {
	case outcome == middleware.UpToDate:
		fn.Status.MarkMiddlewareUpToDate("%s %s is the newest func %s builds (running: %s)", pin.Module, pin.Version, mw.FuncVersion, current)
	case standDown:
		fn.Status.MarkMiddlewareNotManaged("%s %s is available (running: %s) but func.yaml sets deploy.managementDisabled: no rebuild",
			pin.Module, pin.Version, current)
	case !mw.AutoUpdate.Enabled:
		fn.Status.MarkAutoUpdateDisabled("%s %s is available (running: %s) but auto-update is off (set by %s): no rebuild; %s",
			pin.Module, pin.Version, current, mw.AutoUpdate.Source, strings.Replace(from.text(), "a rebuild builds", "a rebuild would build", 1))
	default:
		fn.Status.MarkMiddlewareOutdated("%s %s is available (running: %s): a rebuild is pending; %s", pin.Module, pin.Version, current, from.text())
	}
	obs.middleware = middlewareVerdict{current: got.Version, available: pin.Version, rebuildDue: mw.PendingRebuild, from: from}
	return Result{}, nil
}

// notRead clears what only a read of the running image tells: the middleware step
// does not read it for a runtime a rebuild cannot change.
func notRead(fn *v1alpha1.Function) {
	fn.Status.Middleware.RebuildFrom = nil
	if fn.Status.Deployment != nil {
		fn.Status.Deployment.Revision = ""
	}
}

// markSourceManaged records middleware that lives in the function's own source,
// which a rebuild cannot change: it never gates Ready.
func markSourceManaged(fn *v1alpha1.Function, runtime string, pin funclib.MiddlewarePin) {
	mw := fn.Status.Middleware
	current := ""
	if mw.CurrentSource == v1alpha1.MiddlewareSourceSource {
		current = mw.Current
	}
	outcome, err := middleware.Compare(current, pin.Version)
	switch {
	case current == "" || err != nil:
		fn.Status.MarkSourceManagedUnknown(
			"the %s middleware lives in the function's own source, where no %s version could be read; func %s templates pin %s; a rebuild cannot change it",
			runtime, pin.Module, mw.FuncVersion, pin.Version)
	case outcome == middleware.Outdated:
		fn.Status.MarkSourceManagedOutdated(
			"the %s middleware lives in the function's own source, which pins %s %s, older than %s that func %s templates pin: update it in the source; a rebuild cannot change it",
			runtime, pin.Module, current, pin.Version, mw.FuncVersion)
	default:
		fn.Status.MarkSourceManagedUpToDate(
			"the %s middleware lives in the function's own source, which pins %s %s; func %s templates pin %s; a rebuild cannot change it",
			runtime, pin.Module, current, mw.FuncVersion, pin.Version)
	}
}

// autoUpdate decides whether outdated middleware is rebuilt: the Function's own
// setting (its spec, else its annotation), else the operator's.
func autoUpdate(fn *v1alpha1.Function, cfg config.Config) *v1alpha1.AutoUpdateStatus {
	a := fn.Settings().AutoUpdate(cfg.AutoUpdateMiddleware)
	return &a
}

// registryKeychain reads the kubernetes.io/dockerconfigjson Secret named by
// spec.registry.authSecretRef; without one, the registry is read anonymously.
//
// readWith names the credentials: "secret/<name>@<resourceVersion>", or empty for
// anonymous reads (never a value of the Secret).
func (r *Reconciler) registryKeychain(ctx context.Context, fn *v1alpha1.Function) (kc authn.Keychain, readWith string, err error) {
	ref := fn.Spec.Registry.AuthSecretRef
	if ref == nil || ref.Name == "" {
		return authn.NewMultiKeychain(), "", nil
	}
	secret, err := r.remote.secrets.Get(ctx, fn.Namespace, ref.Name)
	switch {
	case tenancy.IsNotOnboarded(err):
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonNamespaceNotOnboarded, "%s", err)
		return nil, "", err
	case err != nil:
		return nil, "", err
	case secret == nil:
		return nil, "", step.MarkedBy(fn.Status.MarkMiddlewareUnknown, rerror.NewStalling(v1alpha1.ReasonRegistryAuthSecretNotFound,
			"Secret %q named by spec.registry.authSecretRef does not exist in namespace %q", ref.Name, fn.Namespace))
	}
	content, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, "", step.MarkedBy(fn.Status.MarkMiddlewareUnknown, rerror.NewStalling(v1alpha1.ReasonRegistryAuthSecretInvalid,
			"Secret %q named by spec.registry.authSecretRef has no key %q: it must be a %s Secret",
			ref.Name, corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson))
	}
	kc, err = registry.KeychainWithCA(content, secret.Data[registry.KeyCACert])
	if err != nil {
		return nil, "", step.MarkedBy(fn.Status.MarkMiddlewareUnknown, rerror.NewStalling(v1alpha1.ReasonRegistryAuthSecretInvalid, "Secret %q: %w", ref.Name, err))
	}
	return kc, "secret/" + secret.Name + "@" + secret.ResourceVersion, nil
}

// cannotRead reports an image read that says nothing about the image: the registry
// did not answer (network error, timeout, registryTimeout, 5xx), or it refused the
// credentials (401/403), which registryUnreachable holds as an outage only for the
// image the verdict was read from.
func cannotRead(err error) bool {
	var (
		unreachable *registry.UnreachableError
		auth        *registry.AuthError
	)
	return errors.As(err, &unreachable) || (errors.As(err, &auth) && auth.StatusCode != 0)
}

// registryUnreachable handles an image the registry would not let be read
// (cannotRead): it shows in RegistryReachable (severity Warning, not gating Ready)
// from the outage's start, and while it lasts less than outageGrace the last known
// middleware verdict stands (nothing is rebuilt: the steps after it do not run).
// Without a verdict to keep, or past the grace, MiddlewareUpToDate shows the error;
// a refusal (401/403) too unless the image and the credentials (readWith) are those
// the verdict was read with: a new image, a typo (registries answer 401 for
// repositories that do not exist) or an edited Secret shows at once.
func (r *Reconciler) registryUnreachable(ctx context.Context, fn *v1alpha1.Function, image, readWith string, err error) (Result, error) {
	cfg, now := r.config.Load(), r.clock.Now()
	mw := fn.Status.Middleware
	reason := v1alpha1.ReasonRegistryUnreachable
	sameImage := true
	if u := (*registry.UnreachableError)(nil); errors.As(err, &u) && u.TimedOut {
		reason = v1alpha1.ReasonRegistryTimedOut
	}
	if auth := (*registry.AuthError)(nil); errors.As(err, &auth) {
		reason, sameImage = v1alpha1.ReasonRegistryAuthFailed, mw.Image == image && mw.ReadWith == readWith
	}
	o := outageOf(&mw.RegistryUnreachableSince, now, cfg)
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionMiddlewareUpToDate)
	decided := c != nil && !c.IsUnknown() && mw.Current != "" && sameImage
	if !decided || o.over(now) {
		fn.Status.MarkRegistryUnreachable(reason, "%s; unreachable since %s", err, o.started())
		return Result{}, inspectFailed(fn, err)
	}
	fn.Status.MarkRegistryUnreachable(reason, "%s; unreachable since %s: the last known middleware (%s) stands until %s (ConfigMap %s, key %s)",
		err, o.started(), mw.Current, o.ends(), config.ConfigMapName, config.KeyOutageGrace)
	log.FromContext(ctx).Info("the registry does not let the image be read: the last known middleware stands", "reason", reason, "since", o.since, "grace", cfg.OutageGrace)
	return Result{}, rerror.NewWaiting(reason, o.recheck, "%s: the last known middleware stands", err)
}

// inspectFailed records why the image could not be inspected, with a reason users can
// act on: an unreachable registry is retried with backoff; refused credentials, a
// missing image and anything else wait for a change.
func inspectFailed(fn *v1alpha1.Function, err error) error {
	var (
		unreachable *registry.UnreachableError
		auth        *registry.AuthError
		inspect     *registry.InspectError
	)
	reason := v1alpha1.ReasonImageInspectFailed
	switch {
	case errors.As(err, &unreachable):
		reason = v1alpha1.ReasonRegistryUnreachable
		if unreachable.TimedOut {
			reason = v1alpha1.ReasonRegistryTimedOut
		}
		return step.MarkedBy(fn.Status.MarkMiddlewareUnknown, &rerror.Transient{Reason: reason, Err: err})
	case errors.As(err, &auth):
		reason = v1alpha1.ReasonRegistryAuthFailed
	case errors.As(err, &inspect):
		switch inspect.Reason {
		case registry.ReasonNotFound:
			reason = v1alpha1.ReasonImageNotFound
		case registry.ReasonTooLarge:
			reason = v1alpha1.ReasonImageTooLarge
		case registry.ReasonDigestMismatch:
			reason = v1alpha1.ReasonImageDigestMismatch
		case registry.ReasonHostNotAllowed:
			reason = v1alpha1.ReasonHostNotAllowed
		}
	}
	return step.MarkedBy(fn.Status.MarkMiddlewareUnknown, &rerror.Stalling{Reason: reason, Err: err})
}

// inspect reads image within timeout, and leaves its lane after, whatever happens
// (a panic included), saying whether the read timed out.
func (r *Reconciler) inspect(ctx context.Context, image string, kc authn.Keychain, timeout time.Duration, leave func(timedOut bool)) (m registry.Middleware, err error) {
	defer func() {
		var unreachable *registry.UnreachableError
		leave(errors.As(err, &unreachable) && unreachable.TimedOut)
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return r.remote.inspector.Inspect(ctx, image, kc)
}
