// Package registry inspects function images in OCI registries: the middleware version
// they were built with, drawn only from content verified against its digest, and cached
// per repository and digest for the callers whose own access to that image was shown.
// It also tells the base an image was built on (a buildpacks run image, an s2i builder:
// base.go), what that base's tag points to now (baseimage.go), and where else to look
// for it (mirrors.go).
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top) nor
// knative.dev/func (rule func-adapter).
//
// Registry credentials (keychain.go) are matched here, not by go-containerregistry's
// pkg/authn/kubernetes (NewFromPullSecrets): it does not lower-case hosts, treats
// "docker.io" and "index.docker.io" as different, lets "host/team-a" match
// "host/team-ab/..." (a string prefix, not a path) and carries no CA bundle, each of
// which TestKeychain or the inspector's CA tests forbid.
package registry
