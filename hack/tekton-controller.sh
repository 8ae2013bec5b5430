#!/usr/bin/env bash
# Builds the Tekton Pipelines controller (github.com/tektoncd/pipeline/cmd/controller)
# from the Go module proxy into a cache folder stamped with the versions, and prints
# the binary's path (the folder's `controller` file). The version is the one go.mod
# requires, so bumping knative.dev/func (and with it Tekton) moves it.
# A second run with the same versions only prints the path.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
TEKTON_VERSION="${TEKTON_VERSION:-$(cd "${REPO}" && GOFLAGS= go list -m -f '{{.Version}}' github.com/tektoncd/pipeline)}"
# shellcheck source=lib/project-module.sh
source "${REPO}/hack/lib/project-module.sh"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/tekton-controller/pipeline-${TEKTON_VERSION}"
STAMP="${OUT}/.stamp"
# Built against every requirement of go.mod (below): a change to it is a new controller.
WANT="tekton=${TEKTON_VERSION} graph=$(project_graph) go=$(go env GOVERSION) gcflags=${PROJECT_GCFLAGS}"

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" && -x "${OUT}/controller" ]]; then
  echo "${OUT}/controller"
  exit 0
fi

log() { echo "tekton-controller: $*" >&2; }
mkdir -p "${OUT}"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off

# A throw-away module in the project's module graph (lib/project-module.sh: the controller
# shares most of its compiled packages with the tests, which link Tekton's API through
# func): `go get` of the command's package (not only the module) puts every dependency of
# the command in go.sum, which `go build` needs.
log "building github.com/tektoncd/pipeline/cmd/controller ${TEKTON_VERSION} (project module graph)"
project_module "${WORK}/build"
cd "${WORK}/build"
go get "github.com/tektoncd/pipeline/cmd/controller@${TEKTON_VERSION}" >/dev/null 2>&1
go build -trimpath -gcflags "${PROJECT_GCFLAGS}" -ldflags "-s -w" -o "${OUT}/controller" github.com/tektoncd/pipeline/cmd/controller

echo "${WANT}" > "${STAMP}"
log "done: ${OUT}/controller"
echo "${OUT}/controller"
