#!/usr/bin/env bash
# Builds the envtest control plane (etcd, kube-apiserver, kubectl) and kube-controller-manager
# (for tests that need the garbage collector) from the Go module proxy into a cache folder
# stamped with the versions and the binaries, and prints that folder.
# A second run with the same versions only prints the folder.
#
# CONTROL_PLANE_BUILD="kube-apiserver" builds only the API server, into a folder of its own:
# the oldest supported Kubernetes (hack/control-plane-min.sh) needs its own API server, not
# its own etcd, kubectl and controller manager, which would cost a cold run about as much
# again; control-plane-min.sh links those from this script's default folder.
set -euo pipefail

# The newest 1.35 patch the module proxy serves (v1.35.7 is not served here).
K8S_VERSION="${K8S_VERSION:-v1.35.6}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.5}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
BINARIES=(etcd kube-apiserver kubectl kube-controller-manager)
read -r -a BUILD <<< "${CONTROL_PLANE_BUILD:-${BINARIES[*]}}"
HACK="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib/project-module.sh
source "${HACK}/lib/project-module.sh"
# The staging modules (k8s.io/api, client-go, apiserver, ...): for the Kubernetes minor the
# project's go.mod requires, its version of them, built in the project's module graph
# (lib/project-module.sh: the tests and the control plane then share about a thousand
# compiled packages); for another minor (the oldest supported), that release's own.
K8S_MINOR="${K8S_VERSION#v1.}"; K8S_MINOR="${K8S_MINOR%%.*}"
PROJECT_STAGING="$(cd "${HACK}/.." && GOFLAGS= GOWORK=off go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' k8s.io/api)"
if [[ "${PROJECT_STAGING}" == "v0.${K8S_MINOR}."* ]]; then
  # The binaries are built against every requirement of go.mod: a change to it is a new
  # control plane (go.mod and go.sum's hash is in the stamp).
  STAGING_VERSION="${PROJECT_STAGING}" GRAPH="$(project_graph)"
else
  STAGING_VERSION="v0.${K8S_VERSION#v1.}" GRAPH=own
fi
if [[ "${BUILD[*]}" == "${BINARIES[*]}" ]]; then
  OUT="${CACHE_ROOT}/control-plane/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"
else
  OUT="${CACHE_ROOT}/control-plane/k8s-${K8S_VERSION}-$(IFS=+; echo "${BUILD[*]}")"
fi
STAMP="${OUT}/.stamp"
# The binaries are part of the stamp: a folder stamped before one was added is rebuilt.
# providerless: without the in-tree cloud providers (1.30's GCE provider, with three
# google.golang.org/api/compute packages: 2 minutes of a cold build's CPU); no test runs
# on a cloud. Not in the project's graph: from 1.31 on the tag changes no package.
K8S_TAGS=providerless
[[ "${GRAPH}" == own ]] || K8S_TAGS=
WANT="k8s=${K8S_VERSION} staging=${STAGING_VERSION} graph=${GRAPH} etcd=${ETCD_VERSION} go=$(go env GOVERSION) bin=$(IFS=,; echo "${BUILD[*]}") tags=${K8S_TAGS} gcflags=${PROJECT_GCFLAGS}"

cached() {
  [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" ]] || return 1
  local bin
  for bin in "${BUILD[@]}"; do
    [[ -x "${OUT}/${bin}" ]] || return 1
  done
}
if cached; then
  echo "${OUT}"
  exit 0
fi

log() { echo "control-plane: $*" >&2; }
building() { [[ " ${BUILD[*]} " == *" $1 "* ]]; }
mkdir -p "${OUT}"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off

# tool_module DIR: a throw-away module in the project's graph or of its own (GRAPH).
tool_module() {
  if [[ "${GRAPH}" == project:* ]]; then
    project_module "$1"
  else
    mkdir -p "$1" && ( cd "$1" && go mod init example.invalid/toolbuild >/dev/null 2>&1 )
  fi
}

# etcd: its go.mod has relative replaces, so `go install pkg@version` is refused;
# build it from a throw-away module that requires it instead.
if building etcd; then
  log "building etcd ${ETCD_VERSION} (${GRAPH} module graph)"
  tool_module "${WORK}/etcd"
  ( cd "${WORK}/etcd"
    go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null 2>&1
    go build -trimpath -gcflags "${PROJECT_GCFLAGS}" -ldflags "-s -w" -o "${OUT}/etcd" go.etcd.io/etcd/server/v3 )
fi

# kube-apiserver, kubectl and kube-controller-manager: k8s.io/kubernetes replaces its
# staging modules with ./staging/...; a wrapper module replaces each with a published
# v0.x release (STAGING_VERSION).
K8S_BUILD=()
for bin in kube-apiserver kubectl kube-controller-manager; do
  building "${bin}" && K8S_BUILD+=("${bin}")
done
log "building ${K8S_BUILD[*]} ${K8S_VERSION} (staging ${STAGING_VERSION}, ${GRAPH} module graph)"
tool_module "${WORK}/k8s"
cd "${WORK}/k8s"
K8S_GOMOD="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
{
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo "replace ("
  grep -oE 'k8s.io/[a-z0-9-]+ => \./staging/src/k8s.io/[a-z0-9-]+' "${K8S_GOMOD}" | awk '{print $1}' | sort -u |
    while read -r mod; do
      case "${mod}" in
        k8s.io/sample-*)
          # not served by the proxy and not needed by the binaries: a local stub.
          stub="stubs/${mod#k8s.io/}"; mkdir -p "${stub}"
          printf 'module %s\n\ngo 1.22\n' "${mod}" > "${stub}/go.mod"
          echo "  ${mod} => ./${stub}" ;;
        *)
          # one the project's go.mod replaces already keeps that replacement
          grep -qE "^[[:space:]]*(replace[[:space:]]+)?${mod//./\\.}( v[^ ]+)? =>" go.mod ||
            echo "  ${mod} => ${mod} ${STAGING_VERSION}" ;;
      esac
    done
  echo ")"
} >> go.mod
PKGS=()
for bin in "${K8S_BUILD[@]}"; do PKGS+=("k8s.io/kubernetes/cmd/${bin}@${K8S_VERSION}"); done
go get "${PKGS[@]}" >go-get.log 2>&1 || { cat go-get.log >&2; exit 1; }
MAJOR="${K8S_VERSION#v}"; MAJOR="${MAJOR%%.*}"
MINOR="${K8S_VERSION#v*.}"; MINOR="${MINOR%%.*}"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=${MAJOR} -X ${pkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done
# kube-controller-manager: only the controllers test/envtest asks for run (StartControllers).
# One go build for all: one link runs while the next binary's packages compile.
PKGS=()
for bin in "${K8S_BUILD[@]}"; do PKGS+=("k8s.io/kubernetes/cmd/${bin}"); done
go build -trimpath -gcflags "${PROJECT_GCFLAGS}" -tags "${K8S_TAGS}" -ldflags "${LDFLAGS}" -o "${OUT}/" "${PKGS[@]}"

echo "${WANT}" > "${STAMP}"
log "done: ${OUT}"
echo "${OUT}"
