// Package rebase rebases a Cloud Native Buildpacks app image onto a new run image,
// in process: the app's layers are kept, the run image's layers under them are
// replaced by those of the new run image, and the result is pushed by digest.
//
// The rebase itself is the buildpacks lifecycle's (phase.Rebaser of
// github.com/buildpacks/lifecycle): its checks (io.buildpacks.rebasable, target
// os/arch/variant/distro, stack id and mixins for apps of platform API < 0.12, the
// run image name against the metadata), its layer swap (imgutil's Rebase), its
// rewrite of the io.buildpacks.lifecycle.metadata label (runImage.topLayer and
// runImage.reference) and its sync of the io.buildpacks.stack.* and
// io.buildpacks.base.* labels. Every other label of the app is kept.
//
// The images it works on are not imgutil's remote.NewImage, which lifecycle's own
// rebaser command uses, but this package's adapter (image.go): an imgutil.Image over
// a *imgutil.CNBImageCore whose v1.Image go-containerregistry read with this
// package's options, and that Save writes with them. remote.NewImage would not do:
//   - it takes no context: a rebase could not be given a deadline or be cancelled;
//   - it dials through its own transport (imgutil.GetTransport: http.DefaultTransport),
//     past the operator's network guard (pkg/netguard: the policy on the resolved
//     address, the proxy, a Secret's CA bundle) and its read limits
//     (netguard.WithReadLimitFunc), which every registry request of the operator
//     goes through (see pkg/registry's Inspector);
//   - when the base image answers 404 or 401 it returns an EMPTY image without error:
//     a run image that is missing, or that the credentials may not read, would be
//     rebased onto, and the app pushed without an operating system.
//
// The adapter also writes by digest only: the manifest is put under its digest in
// the target repository and no tag is written or moved; the operator never moves a
// tag of the user's. Where it differs from imgutil's remote image, it says why:
//   - it normalises the history of both images before the swap: go-containerregistry's
//     mutate.Rebase, under imgutil's, repeats the first layer of an image without
//     history, and panics on one whose history names more layers than it has;
//   - the rebased image keeps the app's creation time where imgutil writes
//     1980-01-01 (what pack's builds carry unless given a time); a rebase is
//     deterministic either way: the same one again gives the same digest;
//   - it writes the app's manifest media type (mutate.Rebase writes Docker's, with
//     the layers' own types: an OCI app came out as a mix).
//
// Every request goes through Rebaser.Transport (the operator's guarded one) under
// the read limits MaxMemory and MaxBytes; blob reads redirected to object storage
// are blob reads.
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top) nor
// knative.dev/func (rule func-adapter). Linking lifecycle's phase package adds no
// package to the operator: func links it already (through pack).
package rebase
