// Package imagedeploy owns deploying a new image digest into what func deployed for a
// function — its Knative Service, or the Deployment of func's raw or keda deployer —
// without a build: the write func's deploy step would make on an update, and only
// that, made as the namespace's build ServiceAccount (func-operator-builder), which the
// operator impersonates.
//
// The operator holds no write on Knative Services or Deployments of its own. A
// namespace that onboarded it (config/namespace/onboard.yaml) lets it impersonate that
// one ServiceAccount there (ClusterRole func-operator-namespace), and the
// ServiceAccount holds what func's deploy step holds (ClusterRole
// func-operator-builder, pkg/tenancy's BuilderGrant): get and update. A refusal, of
// the impersonation or of the write, is a *ForbiddenError naming the missing grant
// (IsForbidden; tenancy.IsNotOnboarded holds for it too).
//
// It must not import pkg/reconciler or pkg/operator (depguard rule imagedeploy): the
// Reconciler calls it, not the other way round. The func library is reached through
// pkg/funclib only.
package imagedeploy
