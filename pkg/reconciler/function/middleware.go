package function

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/middleware"
	"github.com/fnops/func-operator/pkg/registry"
)

// currentFromSource marks a current middleware version read from the function's own source.
const currentFromSource = "source"

// Where the auto-update setting of a Function comes from.
const (
	autoUpdateFromFunction = "Function"
	autoUpdateFromOperator = "OperatorConfig"
)

// ImageInspector tells which middleware an image was built with.
type ImageInspector interface {
	Inspect(ctx context.Context, ref string, kc authn.Keychain) (registry.Middleware, error)
}

// reconcileMiddleware compares the middleware the running image was built with
// against the one a rebuild with the linked func library would bring.
func (r *Reconciler) reconcileMiddleware(ctx context.Context, fn *v1alpha1.Function) error {
	cfg := r.Config.Load()
	if fn.Status.Middleware == nil {
		fn.Status.Middleware = &v1alpha1.MiddlewareStatus{}
	}
	mw := fn.Status.Middleware
	mw.FuncVersion = funclib.Version()
	mw.AutoUpdate = autoUpdate(fn, cfg)

	runtime, invoke := fn.Status.Deployment.Runtime, fn.Status.Deployment.Invoke
	pin, err := funclib.AvailableMiddleware(runtime, invoke)
	if errors.Is(err, funclib.ErrNoMiddleware) {
		mw.Available, mw.PendingRebuild = "", false
		fn.Status.MarkMiddlewareTrueWithReason(v1alpha1.ReasonSourceManaged,
			"func %s templates pin no middleware for runtime %s: its dependencies live in the function's own source; a rebuild cannot change them",
			mw.FuncVersion, runtime)
		return nil
	}
	if err != nil {
		mw.Available, mw.PendingRebuild = "", false
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonUnsupportedRuntime, "func %s has no template for runtime %q, invoke %q: %s",
			mw.FuncVersion, runtime, invoke, err)
		return &stallingError{reason: v1alpha1.ReasonUnsupportedRuntime, message: err.Error()}
	}
	mw.Available = pin.Version
	if pin.SourceManaged {
		mw.PendingRebuild = false
		fn.Status.MarkMiddlewareTrueWithReason(v1alpha1.ReasonSourceManaged,
			"the %s middleware lives in the function's own source, which pins %s %s%s; func %s templates pin %s; a rebuild cannot change it",
			runtime, pin.Module, sourceVersion(mw), olderHint(mw.Current, pin.Version), mw.FuncVersion, pin.Version)
		return nil
	}
	if mw.CurrentSource == currentFromSource {
		mw.Current, mw.CurrentSource = "", "" // the runtime changed: the image tells now
	}

	kc, err := r.registryKeychain(ctx, fn)
	if err != nil {
		return err
	}
	got, err := r.Inspector.Inspect(ctx, fn.Status.Deployment.Image, kc)
	if err != nil {
		return r.inspectFailed(fn, err)
	}
	mw.Current, mw.CurrentSource = got.Version, got.Source

	outcome, err := middleware.Compare(got.Version, pin.Version)
	if err != nil {
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonImageInspectFailed, "comparing middleware versions: %s", err)
		return &stallingError{reason: v1alpha1.ReasonImageInspectFailed, message: err.Error()}
	}
	current := got.Version
	if outcome == middleware.Unknown {
		current = "unknown"
		outcome = middleware.Outdated
		if cfg.UnknownMiddlewarePolicy == config.UnknownMiddlewareUpToDate {
			outcome = middleware.UpToDate
		}
	}
	switch {
	case outcome == middleware.UpToDate:
		mw.PendingRebuild = false
		fn.Status.MarkMiddlewareUpToDate("%s %s is the newest func %s builds (running: %s)", pin.Module, pin.Version, mw.FuncVersion, current)
	case !mw.AutoUpdate.Enabled:
		mw.PendingRebuild = false
		fn.Status.MarkMiddlewareTrueWithReason(v1alpha1.ReasonAutoUpdateDisabled,
			"%s %s is available (running: %s) but auto-update is off (set by %s): no rebuild", pin.Module, pin.Version, current, mw.AutoUpdate.Source)
	default:
		mw.PendingRebuild = true
		fn.Status.MarkMiddlewareOutdated("%s %s is available (running: %s): a rebuild is pending", pin.Module, pin.Version, current)
	}
	return nil
}

// autoUpdate decides whether outdated middleware is rebuilt: the Function's own
// setting, else the operator's.
func autoUpdate(fn *v1alpha1.Function, cfg config.Config) *v1alpha1.AutoUpdateStatus {
	if fn.Spec.AutoUpdateMiddleware != nil {
		return &v1alpha1.AutoUpdateStatus{Enabled: *fn.Spec.AutoUpdateMiddleware, Source: autoUpdateFromFunction}
	}
	return &v1alpha1.AutoUpdateStatus{Enabled: cfg.AutoUpdateMiddleware, Source: autoUpdateFromOperator}
}

// registryKeychain reads the kubernetes.io/dockerconfigjson Secret named by
// spec.registry.authSecretRef; without one, the registry is read anonymously.
func (r *Reconciler) registryKeychain(ctx context.Context, fn *v1alpha1.Function) (authn.Keychain, error) {
	ref := fn.Spec.Registry.AuthSecretRef
	if ref == nil || ref.Name == "" {
		return authn.NewMultiKeychain(), nil
	}
	secret, err := r.secret(ctx, fn, ref.Name)
	switch {
	case err != nil:
		return nil, err
	case secret == nil:
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonRegistrySecretNotFound,
			"Secret %q named by spec.registry.authSecretRef does not exist in namespace %q", ref.Name, fn.Namespace)
		return nil, &stallingError{reason: v1alpha1.ReasonRegistrySecretNotFound, message: "registry Secret not found"}
	}
	content, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonRegistrySecretInvalid,
			"Secret %q named by spec.registry.authSecretRef has no key %q: it must be a %s Secret",
			ref.Name, corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson)
		return nil, &stallingError{reason: v1alpha1.ReasonRegistrySecretInvalid, message: "registry Secret has no .dockerconfigjson"}
	}
	kc, err := registry.Keychain(content)
	if err != nil {
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonRegistrySecretInvalid, "Secret %q: %s", ref.Name, err)
		return nil, &stallingError{reason: v1alpha1.ReasonRegistrySecretInvalid, message: err.Error()}
	}
	return kc, nil
}

// inspectFailed records why the image could not be inspected: an unreachable
// registry is retried with backoff, anything else waits for a change.
func (r *Reconciler) inspectFailed(fn *v1alpha1.Function, err error) error {
	var unreachable *registry.UnreachableError
	if errors.As(err, &unreachable) {
		fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonRegistryUnreachable, "%s", err)
		return err
	}
	fn.Status.MarkMiddlewareUnknown(v1alpha1.ReasonImageInspectFailed, "%s", err)
	return &stallingError{reason: v1alpha1.ReasonImageInspectFailed, message: err.Error()}
}

// sourceVersion is the version the function's source pins, for a message.
func sourceVersion(mw *v1alpha1.MiddlewareStatus) string {
	if mw.CurrentSource == currentFromSource && mw.Current != "" {
		return mw.Current
	}
	return "(a version that could not be read)"
}

// olderHint says when the source's version is older than the template's.
func olderHint(current, available string) string {
	if c, err := middleware.Compare(current, available); err == nil && c == middleware.Outdated {
		return " (older: update it in the source)"
	}
	return ""
}
