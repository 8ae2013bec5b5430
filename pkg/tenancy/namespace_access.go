package tenancy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// What a namespace grants to onboard func-operator (config/namespace/onboard.yaml).
const (
	// NamespaceClusterRole is what the operator may do in an onboarded namespace.
	NamespaceClusterRole = "func-operator-namespace"
	// BuilderClusterRole is what the build ServiceAccount may do there.
	BuilderClusterRole = "func-operator-builder"
	// OnboardingManifest onboards a namespace: kubectl apply -n <ns> -f it.
	OnboardingManifest = "config/namespace/onboard.yaml"
	// KedaBuilderClusterRole is what the build ServiceAccount may do there beyond
	// BuilderClusterRole to deploy a function of func's keda deployer.
	KedaBuilderClusterRole = "func-operator-builder-keda"
	// KedaOnboardingManifest grants it, beside OnboardingManifest.
	KedaOnboardingManifest = "config/namespace/onboard-keda.yaml"
)

// Grant is one right: a verb on a resource of an API group, on every object of it,
// or only on the object Name (a rule's resourceNames).
type Grant struct{ Group, Resource, Verb, Name string }

// in is g as the resource attributes of an access review in namespace.
func (g Grant) in(namespace string) *authorizationv1.ResourceAttributes {
	return &authorizationv1.ResourceAttributes{Namespace: namespace, Group: g.Group, Resource: g.Resource, Verb: g.Verb, Name: g.Name}
}

func (g Grant) String() string {
	s := g.Verb + " " + g.Resource
	if g.Group != "" {
		s += "." + g.Group
	}
	if g.Name != "" {
		s += " named " + g.Name
	}
	return s
}

// BuilderServiceAccount is the build ServiceAccount config/namespace/onboard.yaml
// creates (the default of the operator's pipelineServiceAccount): the one ServiceAccount
// ClusterRole func-operator-namespace lets the operator impersonate.
const BuilderServiceAccount = "func-operator-builder"

// ImpersonateGrant is the right to act as ServiceAccount serviceAccount of the
// namespace (pkg/imagedeploy deploys an image so). NamespaceGrant holds it for
// BuilderServiceAccount.
func ImpersonateGrant(serviceAccount string) Grant {
	return Grant{Resource: "serviceaccounts", Verb: "impersonate", Name: serviceAccount}
}

// NamespaceGrant is what ClusterRole func-operator-namespace grants the operator
// (config/200-namespace-clusterrole.yaml; a test keeps the two equal): what a build
// writes, and impersonation of BuilderServiceAccount alone, to deploy a new image as
// func's deploy step would (pkg/imagedeploy).
var NamespaceGrant = slices.Concat(
	grants("", "secrets", "get", "list", "watch", "create", "update", "delete"),
	grants("", "persistentvolumeclaims", "list", "create", "delete"),
	grants("", "serviceaccounts", "get", "patch"),
	[]Grant{ImpersonateGrant(BuilderServiceAccount)},
	grants("", "pods/log", "get"),
	grants("tekton.dev", "pipelines", "get", "list", "create", "update", "delete"),
	grants("tekton.dev", "pipelineruns", "create", "delete"),
)

// BuilderGrant is what ClusterRole func-operator-builder grants the build
// ServiceAccount (config/200-builder-clusterrole.yaml; a test keeps the two equal).
var BuilderGrant = slices.Concat(
	grants("serving.knative.dev", "services", "get", "list", "watch", "create", "update"),
	grants("serving.knative.dev", "routes", "get"),
	grants("", "secrets", "get"), grants("", "configmaps", "get"), grants("", "persistentvolumeclaims", "get"), grants("", "serviceaccounts", "get"),
	grants("apps", "deployments", "get", "create", "update"),
	grants("apps", "replicasets", "list"),
	grants("", "services", "get", "create", "update"),
	grants("", "pods", "list"),
	grants("eventing.knative.dev", "triggers", "create", "list", "delete"),
)

// KedaBuilderGrant is what ClusterRole func-operator-builder-keda grants the build
// ServiceAccount (config/200-builder-keda-clusterrole.yaml; a test keeps the two equal).
var KedaBuilderGrant = grants("http.keda.sh", "httpscaledobjects", "get", "create", "update")

// grants is one Grant per verb.
func grants(group, resource string, verbs ...string) []Grant {
	out := make([]Grant, len(verbs))
	for i, v := range verbs {
		out[i] = Grant{Group: group, Resource: resource, Verb: v}
	}
	return out
}

// AccessTTL is how long a namespace found onboarded is not checked again, and how
// soon a Function whose namespace was not is looked at again: no watch sees a
// namespace onboard.
const AccessTTL = time.Minute

// NamespaceAccess tells whether a namespace has onboarded func-operator: the
// operator holds NamespaceGrant there (one SelfSubjectRulesReview; impersonation for
// the build ServiceAccount checked, by its name), and the build ServiceAccount exists
// and holds BuilderGrant (SubjectAccessReviews). A namespace found onboarded is
// believed for AccessTTL.
type NamespaceAccess struct {
	Client client.Client
	// Reader reads ServiceAccounts; the cache holds none.
	Reader client.Reader
	// clock dates what was found; the real clock when nil.
	clock clock.PassiveClock

	mu sync.Mutex
	ok map[accessKey]time.Time // when found onboarded
}

// accessKey is what a namespace was found onboarded for: builds that run as a
// ServiceAccount, of keda functions or not.
type accessKey struct {
	types.NamespacedName
	keda, rebase bool
}

// Check returns nil when namespace is onboarded for builds that run as
// serviceAccount, else a Stalling error whose reason is NamespaceNotOnboarded and
// whose message names what is missing and how to grant it.
func (a *NamespaceAccess) Check(ctx context.Context, namespace, serviceAccount string) error {
	return a.CheckFor(ctx, namespace, serviceAccount, false)
}

// CheckFor is Check, for a function of func's keda deployer when keda: the build
// ServiceAccount holds KedaBuilderGrant too (KedaOnboardingManifest).
func (a *NamespaceAccess) CheckFor(ctx context.Context, namespace, serviceAccount string, keda bool) error {
	return a.checkFor(ctx, namespace, serviceAccount, keda, false)
}

// CheckForRebase is CheckFor for a rebase, which the operator deploys itself as the
// build ServiceAccount: the namespace must also let it impersonate that one. Only a
// rebase asks for it, so a pipelineServiceAccount the ClusterRole does not name
// holds back no pipeline build.
func (a *NamespaceAccess) CheckForRebase(ctx context.Context, namespace, serviceAccount string) error {
	return a.checkFor(ctx, namespace, serviceAccount, false, true)
}

func (a *NamespaceAccess) checkFor(ctx context.Context, namespace, serviceAccount string, keda, rebase bool) error {
	key := accessKey{types.NamespacedName{Namespace: namespace, Name: serviceAccount}, keda, rebase}
	var clk clock.PassiveClock = clock.RealClock{}
	if a.clock != nil {
		clk = a.clock
	}
	a.mu.Lock()
	at, found := a.ok[key]
	fresh := found && clk.Since(at) < AccessTTL
	if found && !fresh {
		delete(a.ok, key)
	}
	a.mu.Unlock()
	if fresh {
		return nil
	}
	missing, err := a.missing(ctx, namespace, serviceAccount, rebase)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return NotOnboarded(namespace, fmt.Sprintf("namespace %s has not onboarded func-operator: %s", namespace, strings.Join(missing, "; ")))
	}
	if keda {
		lacks, err := a.builderLacks(ctx, namespace, serviceAccount, KedaBuilderGrant)
		if err != nil {
			return err
		}
		if len(lacks) > 0 {
			stall := NotOnboarded(namespace, fmt.Sprintf("namespace %s has not onboarded func-operator for functions of func's keda deployer: the build ServiceAccount %s %s",
				namespace, serviceAccount, lackingWords(lacks, KedaBuilderGrant, KedaBuilderClusterRole)))
			stall.Err.(*NotOnboardedError).Manifest = KedaOnboardingManifest
			return stall
		}
	}
	a.mu.Lock()
	if a.ok == nil {
		a.ok = map[accessKey]time.Time{}
	}
	a.ok[key] = clk.Now()
	a.mu.Unlock()
	return nil
}

// NotOnboarded is the stall of a Function whose namespace has not granted the
// operator what it needs (what says which): it names the grant, and comes back
// within AccessTTL, since no watch sees a namespace onboard.
func NotOnboarded(namespace, what string) *rerror.Stalling {
	return &rerror.Stalling{Reason: v1alpha1.ReasonNamespaceNotOnboarded, RecheckAfter: AccessTTL,
		Err: &NotOnboardedError{Namespace: namespace, What: what}}
}

// NotOnboardedError is a namespace that has not granted the operator what it needs
// (NamespaceNotOnboarded): callers tell it with IsNotOnboarded, never by its reason.
type NotOnboardedError struct {
	Namespace string
	// What is lacking, in words.
	What string
	// Manifest grants it; OnboardingManifest when empty.
	Manifest string
}

func (e *NotOnboardedError) Error() string {
	m := e.Manifest
	if m == "" {
		m = OnboardingManifest
	}
	return fmt.Sprintf("%s; a namespace admin grants it with `kubectl apply -n %s -f %s` (from the func-operator release)", e.What, e.Namespace, m)
}

// IsNotOnboarded reports whether err's chain holds a NotOnboardedError.
func IsNotOnboarded(err error) bool {
	var n *NotOnboardedError
	return errors.As(err, &n)
}

// missing lists, in words, what namespace lacks.
func (a *NamespaceAccess) missing(ctx context.Context, namespace, serviceAccount string, rebase bool) ([]string, error) {
	var missing []string
	rules := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	if err := a.Client.Create(ctx, rules); err != nil {
		return nil, fmt.Errorf("reviewing the operator's rights in namespace %s: %w", namespace, err)
	}
	want := namespaceGrant(serviceAccount, rebase)
	lacks := lacking(want, rules.Status.ResourceRules)
	if len(lacks) > 0 && rules.Status.Incomplete {
		// An authorizer that cannot list its rules (a webhook) may still allow them.
		var err error
		if lacks, err = a.lackingOneByOne(ctx, namespace, lacks); err != nil {
			return nil, err
		}
	}
	if len(lacks) > 0 {
		missing = append(missing, "the operator "+lackingWords(lacks, want, NamespaceClusterRole))
	}
	err := a.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: serviceAccount}, &corev1.ServiceAccount{})
	switch {
	case apierrors.IsNotFound(err):
		return append(missing, fmt.Sprintf("the build ServiceAccount %s does not exist", serviceAccount)), nil
	case apierrors.IsForbidden(err):
		return missing, nil // said above: the operator may not get serviceaccounts
	case err != nil:
		return nil, fmt.Errorf("reading the build ServiceAccount %s/%s: %w", namespace, serviceAccount, err)
	}
	if lacks, err = a.builderLacks(ctx, namespace, serviceAccount, BuilderGrant); err != nil {
		return nil, err
	}
	if len(lacks) > 0 {
		missing = append(missing, "the build ServiceAccount "+serviceAccount+" "+lackingWords(lacks, BuilderGrant, BuilderClusterRole))
	}
	return missing, nil
}

// builderLacks returns what of want the build ServiceAccount of namespace lacks
// (one SubjectAccessReview per grant).
func (a *NamespaceAccess) builderLacks(ctx context.Context, namespace, serviceAccount string, want []Grant) ([]Grant, error) {
	var lacks []Grant
	for _, g := range want {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + namespace + ":" + serviceAccount,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: g.in(namespace),
		}}
		if err := a.Client.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("reviewing the build ServiceAccount's rights in namespace %s: %w", namespace, err)
		}
		if !sar.Status.Allowed {
			lacks = append(lacks, g)
		}
	}
	return lacks, nil
}

// lackingOneByOne asks the API server about each grant the operator seems to lack.
func (a *NamespaceAccess) lackingOneByOne(ctx context.Context, namespace string, grants []Grant) ([]Grant, error) {
	var out []Grant
	for _, g := range grants {
		ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: g.in(namespace)}}
		if err := a.Client.Create(ctx, ssar); err != nil {
			return nil, fmt.Errorf("reviewing the operator's rights in namespace %s: %w", namespace, err)
		}
		if !ssar.Status.Allowed {
			out = append(out, g)
		}
	}
	return out, nil
}

// lacking returns the grants that rules do not cover.
func lacking(want []Grant, rules []authorizationv1.ResourceRule) []Grant {
	var out []Grant
	for _, g := range want {
		if !slices.ContainsFunc(rules, func(r authorizationv1.ResourceRule) bool { return covers(r, g) }) {
			out = append(out, g)
		}
	}
	return out
}

// covers reports whether rule allows g: on every object (a rule without
// resourceNames), or, for a grant of one object, naming it.
func covers(rule authorizationv1.ResourceRule, g Grant) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	if !has(rule.APIGroups, g.Group) || !has(rule.Resources, g.Resource) || !has(rule.Verbs, g.Verb) {
		return false
	}
	return len(rule.ResourceNames) == 0 || (g.Name != "" && slices.Contains(rule.ResourceNames, g.Name))
}

// namespaceGrant is NamespaceGrant for builds that run as serviceAccount. A rebase
// impersonates that one (ClusterRole func-operator-namespace names only
// BuilderServiceAccount; another pipelineServiceAccount needs a grant of its own); a
// pipeline build does not, and is not asked for it.
func namespaceGrant(serviceAccount string, rebase bool) []Grant {
	out := make([]Grant, 0, len(NamespaceGrant))
	for _, g := range NamespaceGrant {
		switch {
		case g != ImpersonateGrant(BuilderServiceAccount):
			out = append(out, g)
		case rebase:
			out = append(out, ImpersonateGrant(serviceAccount))
		}
	}
	return out
}

// lackingWords says what lacks of all (the grants of ClusterRole role) means: none
// of it, or which rights.
func lackingWords(lacks, all []Grant, role string) string {
	if len(lacks) == len(all) {
		return fmt.Sprintf("holds none of ClusterRole %s here (RoleBinding %s)", role, role)
	}
	return fmt.Sprintf("may not %s (ClusterRole %s, RoleBinding %s)", words(lacks), role, role)
}

// words lists grants for a message.
func words(grants []Grant) string {
	out := make([]string, len(grants))
	for i, g := range grants {
		out[i] = g.String()
	}
	return strings.Join(out, ", ")
}
