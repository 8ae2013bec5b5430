// Package oncommit owns the source policy's check (annotation
// functions.dev/deploy-on-commit, ConfigMap key deployOnCommit): whether a new commit
// of the followed reference changes a function against the commit it runs, told by
// the git tree of the function's directory, which is the same exactly when nothing in
// it changed. It writes status.deployOnCommit and condition SourceDeployed, and hands
// its verdict to the build sub-reconciler (build.OnCommit), which builds the commit
// through the same path as every rebuild.
//
// It is called by the Function reconciler and must not import it
// (pkg/reconciler/function), nor knative.dev/func.
package oncommit
