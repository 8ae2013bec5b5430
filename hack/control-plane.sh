#!/usr/bin/env bash
# Builds the envtest control plane (etcd, kube-apiserver, kubectl) and kube-controller-manager
# (for tests that need the garbage collector) from the Go module proxy into a cache folder
# stamped with the versions and the binaries, and prints that folder.
# A second run with the same versions only prints the folder.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.35.0}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.5}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/control-plane/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"
STAMP="${OUT}/.stamp"
BINARIES=(etcd kube-apiserver kubectl kube-controller-manager)
# The binaries are part of the stamp: a folder stamped before one was added is rebuilt.
WANT="k8s=${K8S_VERSION} etcd=${ETCD_VERSION} go=$(go env GOVERSION) bin=$(IFS=,; echo "${BINARIES[*]}")"

cached() {
  [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" ]] || return 1
  local bin
  for bin in "${BINARIES[@]}"; do
    [[ -x "${OUT}/${bin}" ]] || return 1
  done
}
if cached; then
  echo "${OUT}"
  exit 0
fi

log() { echo "control-plane: $*" >&2; }
mkdir -p "${OUT}"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off

# etcd: its go.mod has relative replaces, so `go install pkg@version` is refused;
# build it from a throw-away module that requires it instead.
log "building etcd ${ETCD_VERSION}"
mkdir -p "${WORK}/etcd"
( cd "${WORK}/etcd"
  go mod init example.invalid/etcdbuild >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null 2>&1
  go build -trimpath -o "${OUT}/etcd" go.etcd.io/etcd/server/v3 )

# kube-apiserver, kubectl and kube-controller-manager: k8s.io/kubernetes replaces its
# staging modules with ./staging/...; a wrapper module replaces each with its published
# v0.x release.
log "building kube-apiserver, kubectl and kube-controller-manager ${K8S_VERSION}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
mkdir -p "${WORK}/k8s"
cd "${WORK}/k8s"
go mod init example.invalid/k8sbuild >/dev/null 2>&1
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
        *) echo "  ${mod} => ${mod} ${STAGING_VERSION}" ;;
      esac
    done
  echo ")"
} >> go.mod
go get "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" "k8s.io/kubernetes/cmd/kubectl@${K8S_VERSION}" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@${K8S_VERSION}" >/dev/null 2>&1
MAJOR="${K8S_VERSION#v}"; MAJOR="${MAJOR%%.*}"
MINOR="${K8S_VERSION#v*.}"; MINOR="${MINOR%%.*}"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=${MAJOR} -X ${pkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done
go build -trimpath -ldflags "${LDFLAGS}" -o "${OUT}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "${LDFLAGS}" -o "${OUT}/kubectl" k8s.io/kubernetes/cmd/kubectl
# Only its garbagecollector controller runs in tests (test/envtest StartGarbageCollector).
go build -trimpath -ldflags "${LDFLAGS}" -o "${OUT}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager

echo "${WANT}" > "${STAMP}"
log "done: ${OUT}"
echo "${OUT}"
