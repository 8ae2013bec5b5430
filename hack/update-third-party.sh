#!/usr/bin/env bash
# Copies the Knative Serving, Knative Eventing (Trigger), Tekton Pipelines and KEDA HTTP add-on
# (HTTPScaledObject, which func's keda deployer writes) CRDs from
# the module versions go.mod pins into third_party/, with the projects' licenses. With --verify it fails when the
# copies differ from the pinned modules. The copies are unchanged: test/envtest sets the conversion strategy of
# Tekton's CRDs to None when it installs them (no conversion webhook runs there).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "${ROOT}"

copy() { # $1: output root
  local out="$1" serving eventing tekton keda
  go mod download knative.dev/serving knative.dev/eventing github.com/tektoncd/pipeline github.com/kedacore/http-add-on
  serving="$(go list -m -f '{{.Dir}}' knative.dev/serving)"
  eventing="$(go list -m -f '{{.Dir}}' knative.dev/eventing)"
  tekton="$(go list -m -f '{{.Dir}}' github.com/tektoncd/pipeline)"
  keda="$(go list -m -f '{{.Dir}}' github.com/kedacore/http-add-on)"
  rm -rf "${out}/knative-serving" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
  mkdir -p "${out}/knative-serving" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
  cp "${eventing}/config/core/resources/trigger.yaml" "${out}/knative-eventing/"
  cp "${eventing}/LICENSE" "${out}/knative-eventing/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/eventing > "${out}/knative-eventing/VERSION"
  cp "${serving}"/config/core/300-resources/*.yaml "${out}/knative-serving/"
  cp "${serving}/LICENSE" "${out}/knative-serving/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' knative.dev/serving > "${out}/knative-serving/VERSION"
  cp "${tekton}"/config/300-crds/300-*.yaml "${out}/tekton-pipeline/"
  cp "${tekton}/LICENSE" "${out}/tekton-pipeline/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' github.com/tektoncd/pipeline > "${out}/tekton-pipeline/VERSION"
  cp "${keda}/config/crd/bases/http.keda.sh_httpscaledobjects.yaml" "${out}/keda-http-add-on/"
  cp "${keda}/LICENSE" "${out}/keda-http-add-on/LICENSE"
  go list -m -f '{{.Path}} {{.Version}}' github.com/kedacore/http-add-on > "${out}/keda-http-add-on/VERSION"
  chmod -R u+w,go-w "${out}/knative-serving" "${out}/knative-eventing" "${out}/tekton-pipeline" "${out}/keda-http-add-on"
}

if [[ "${1:-}" != "--verify" ]]; then
  copy "${ROOT}/third_party"
  exit 0
fi
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
copy "${scratch}"
for d in knative-serving knative-eventing tekton-pipeline keda-http-add-on; do
  if ! diff -rq "${ROOT}/third_party/${d}" "${scratch}/${d}" >&2; then
    echo "third_party/${d} differs from the module go.mod pins: run 'make third-party'" >&2
    exit 1
  fi
done
