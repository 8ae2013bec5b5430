#!/usr/bin/env bash
# Copies the Knative Serving, Knative networking (the KIngress, Certificate, ServerlessService and
# ClusterDomainClaim Serving's controller needs), Knative caching (its Image, which Serving's controller watches), Knative Eventing (Trigger), Tekton Pipelines and KEDA HTTP add-on
# (HTTPScaledObject, which func's keda deployer writes) CRDs from
# the module versions go.mod pins into third_party/, with the projects' licenses. With --verify it fails when the
# copies differ from the pinned modules. The copies are unchanged: test/envtest sets the conversion strategy of
# Tekton's CRDs to None when it installs them (no conversion webhook runs there).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "${ROOT}"

copy() { # $1: output root
  local out="$1" serving networking caching eventing tekton keda
  go mod download knative.dev/serving knative.dev/networking knative.dev/caching knative.dev/eventing github.com/tektoncd/pipeline github.com/kedacore/http-add-on
  serving="$(go list -m -f '{{.Dir}}' knative.dev/serving)"
  networking="$(go list -m -f '{{.Dir}}' knative.dev/networking)"
  caching="$(go list -m -f '{{.Dir}}' knative.dev/caching)"
  eventing="$(go list -m -f '{{.Dir}}' knative.dev/eventing)"
  tekton="$(go list -m -f '{{.Dir}}' github.com/tektoncd/pipeline)"
  keda="$(go list -m -f '{{.Dir}}' github.com/kedacore/http-add-on)"
  rm -rf "${out}/knative-serving" "${out}/knative-networking" "${out}/knative-caching" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
  mkdir -p "${out}/knative-serving" "${out}/knative-networking" "${out}/knative-caching" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
  cp "${eventing}/config/core/resources/trigger.yaml" "${out}/knative-eventing/"
  cp "${eventing}/LICENSE" "${out}/knative-eventing/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/eventing > "${out}/knative-eventing/VERSION"
  cp "${serving}"/config/core/300-resources/*.yaml "${out}/knative-serving/"
  cp "${serving}/LICENSE" "${out}/knative-serving/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/serving > "${out}/knative-serving/VERSION"
  cp "${networking}"/config/{certificate,ingress,serverlessservice,domain-claim}.yaml "${out}/knative-networking/"
  cp "${networking}/LICENSE" "${out}/knative-networking/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/networking > "${out}/knative-networking/VERSION"
  cp "${caching}/config/image.yaml" "${caching}/LICENSE" "${out}/knative-caching/"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/caching > "${out}/knative-caching/VERSION"
  cp "${tekton}"/config/300-crds/300-*.yaml "${out}/tekton-pipeline/"
  cp "${tekton}/LICENSE" "${out}/tekton-pipeline/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' github.com/tektoncd/pipeline > "${out}/tekton-pipeline/VERSION"
  cp "${keda}/config/crd/bases/http.keda.sh_httpscaledobjects.yaml" "${out}/keda-http-add-on/"
  cp "${keda}/LICENSE" "${out}/keda-http-add-on/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' github.com/kedacore/http-add-on > "${out}/keda-http-add-on/VERSION"
  chmod -R u+w,go-w "${out}/knative-serving" "${out}/knative-networking" "${out}/knative-caching" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
}

if [[ "${1:-}" != "--verify" ]]; then
  copy "${ROOT}/third_party"
  exit 0
fi
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
copy "${scratch}"
for d in knative-serving knative-networking knative-caching knative-eventing tekton-pipeline keda-http-add-on; do
  if ! diff -rq "${ROOT}/third_party/${d}" "${scratch}/${d}" >&2; then
    echo "third_party/${d} differs from the module go.mod pins: run 'make third-party'" >&2
    exit 1
  fi
done
