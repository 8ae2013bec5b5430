package build

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/metrics"
	"github.com/fnops/func-operator/pkg/outcomes"
	"github.com/fnops/func-operator/pkg/rebuild"
)

// Sources reads func.yaml at a commit for a build (git.Fetcher).
type Sources interface {
	Read(ctx context.Context, url string, head git.Head, fnPath string, auth *git.Auth, timeout time.Duration) (git.Result, error)
	ReadAt(ctx context.Context, url string, head git.Head, want, anchor, fnPath string, auth *git.Auth, timeout time.Duration) (git.Result, error)
}

// Access tells whether a namespace granted the operator what a build needs
// (tenancy.NamespaceAccess).
type Access interface {
	CheckFor(ctx context.Context, namespace, serviceAccount string, keda bool) error
	// CheckForRebase also asks for the impersonation of serviceAccount a rebase's deploy uses.
	CheckForRebase(ctx context.Context, namespace, serviceAccount string) error
}

// GitCredentials lists the git credentials Secrets of a Function's builds, by
// metadata (tenancy.Secrets).
type GitCredentials interface {
	GitCredentials(namespace, name string) []*metav1.PartialObjectMetadata
}

// Keychain returns the registry credentials of fn (its spec.registry.authSecretRef),
// and names them ("secret/<name>@<resourceVersion>", never a value).
type Keychain func(ctx context.Context, fn *v1alpha1.Function) (authn.Keychain, string, error)

// Deps is what the build sub-reconciler reads and writes through.
type Deps struct {
	// Client reads PipelineRuns from the manager's cache and deletes build objects;
	// APIReader reads what the cache does not hold (TaskRuns, ServiceAccounts, runs
	// a lagging cache may miss).
	Client    client.Client
	APIReader client.Reader
	Recorder  record.EventRecorder
	Config    *config.Store
	// Clock is the real one when nil.
	Clock clock.PassiveClock
	// Builds is the rebuild machinery: the fleet's queue, the launcher, the leadership
	// clock, whether the cluster serves Tekton. nil disables rebuilds.
	Builds *rebuild.Builds
	// Access is asked before a build holds a slot; GitCredentials, when set, finds
	// the credentials Secrets of ended builds to delete.
	Access         Access
	Sources        Sources
	GitCredentials GitCredentials
	Keychain       Keychain
	// KEDAServed reports whether the cluster serves HTTPScaledObjects; nil: it does not.
	KEDAServed func() bool
	Metrics    *metrics.Metrics
	// Outcomes sends builds' transitions as CloudEvents; nil sends none.
	Outcomes *outcomes.Sender
	// Rebaser rebases a buildpacks image onto its new run image and deploys it; nil:
	// base updates are rebuilt or reported only.
	Rebaser Rebaser
}

// Reconciler is the build sub-reconciler of the Function reconciler: it follows,
// starts, stops and cleans up a Function's builds.
type Reconciler struct {
	Deps
}

// New returns the build sub-reconciler of d.
func New(d Deps) *Reconciler {
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	return &Reconciler{Deps: d}
}

// Enabled reports whether the operator rebuilds at all.
func (r *Reconciler) Enabled() bool { return r != nil && r.Builds != nil }

// Observed is what the checks of one reconcile learned, which the build steps read.
type Observed struct {
	// Head is the followed branch and its commit; Auth the repository credentials
	// read in this reconcile; Metadata func.yaml at Head when this reconcile read it
	// (nil: it is read again, from the Sources' cache).
	Head     git.Head
	Auth     *git.Auth
	Metadata *funclib.Metadata
	// Deployed is what func deployed, which the Function is bound to.
	Deployed Deployed
	// Middleware is how the running middleware compares with what a rebuild brings.
	Middleware Middleware
	// From is the commit a rebuild builds.
	From From
	// OnCommit is the source policy's verdict.
	OnCommit OnCommit
	// Base is the base policy's verdict.
	Base Base
}

// OnCommit is the source policy's verdict: whether the followed commit (Head.Commit)
// is to be built and deployed.
type OnCommit struct {
	// Enabled: the source policy is on.
	Enabled bool
	// Changed: the followed commit changes the function's directory against Deployed,
	// the commit the running function was built from (in full).
	Changed  bool
	Deployed string
	// Tree is the git tree of the function's directory at the followed commit.
	Tree string
	// Tried: the function's directory at the followed commit is what the last build
	// for a new commit built (status.deployOnCommit.lastBuildTree).
	Tried bool
	// NotBefore is when the minimum interval after the last source build is over.
	NotBefore time.Time
}

// Middleware is the middleware step's verdict.
type Middleware struct {
	// Current is the running version ("" when unknown); Available what a rebuild brings.
	Current, Available string
	// Due: the middleware is outdated and auto-update is on.
	Due bool
}

// Target is what one of func's deployers deployed for the function: a Knative
// Service, or a raw or keda Deployment.
type Target interface {
	fmt.Stringer
	// Deployer is funclib.DeployerKnative, DeployerRaw or DeployerKeda.
	Deployer() string
}

// Deployed is what the deployment step found.
type Deployed struct {
	// Target is nil when the step found nothing (or did not run).
	Target Target
	// BoundUID is the bound object's (Knative Service, Deployment); Image the image it runs.
	BoundUID types.UID
	Image    string
	// RollingOut: a raw or keda Deployment has not rolled its template out yet, or a
	// Knative Service's latest Revision is not ready yet.
	RollingOut bool
	// Failure, when its Revision is set: Knative reports the Service's newest
	// Revision failed (its old one serves).
	Failure rebuild.RevisionFailure
	// Unbound: the step left the object the Function was bound to (gone, or not the
	// Function's any more); a build in flight for it is stopped (StopUnbound).
	Unbound bool
}

// From is the commit a rebuild builds, as the middleware step decided it.
type From struct {
	// Commit, and Source, the policy that chose it (v1alpha1.RebuildFrom*).
	Commit, Source string
	// Problem, when set, says why no commit can be built; Remedy what to do about it
	// (or about a commit that cannot be read).
	Problem, Remedy string
}

// now is the reconcile's time.
func (r *Reconciler) now() time.Time { return r.Clock.Now() }

// machine is the build state machine, with the configured backoff.
func (r *Reconciler) machine() rebuild.Machine {
	return rebuild.Machine{RetryDelay: r.Config.Load().BuildRetryDelay}
}

// apply records t, the build machine's answer to an event of fn's build: the status,
// then the queue and the launch.
func (r *Reconciler) apply(fn *v1alpha1.Function, t rebuild.Transition) {
	id := ""
	if b := fn.Status.Build; b != nil {
		id = b.ID
	}
	fn.Status.Build = t.Build
	r.Builds.Apply(client.ObjectKeyFromObject(fn), id, t)
}

// GiveUpPlace is the one way out of the queue: a Function that cannot or need not be
// rebuilt now leaves it, and its Queued build the status, so that it holds no place a
// slot would wait on (the machine's GaveUp).
func (r *Reconciler) GiveUpPlace(fn *v1alpha1.Function) {
	if !r.Enabled() {
		return // no rebuilds, no queue
	}
	r.apply(fn, r.machine().Next(fn.Status.Build, rebuild.Event{Kind: rebuild.GaveUp, At: r.now(),
		Waiting: r.Builds.Queue.IsWaiting(client.ObjectKeyFromObject(fn))}))
}

// TektonFound tells the rebuild machinery that the cluster serves Tekton now.
func (r *Reconciler) TektonFound() {
	if r.Enabled() {
		r.Builds.TektonFound()
	}
}
