#!/usr/bin/env bash
# Builds (once, cached) the control plane of the oldest Kubernetes the README supports,
# MIN_K8S_VERSION, for test/install, and prints its folder: its own kube-apiserver, and
# the current control plane's etcd, kubectl and kube-controller-manager, linked from
# hack/control-plane.sh's folder (what the install proves, schemas, admission policies and
# RBAC, is the API server's; building the rest again would cost a cold run about as much
# as the API server).
#
# --api-server-only builds the API server and prints its folder without the links, so
# that make test can build it beside the current control plane, which it does not wait for.
set -euo pipefail
HACK="$(dirname "$0")"
out="$(K8S_VERSION="${MIN_K8S_VERSION:-v1.30.14}" CONTROL_PLANE_BUILD=kube-apiserver "${HACK}/control-plane.sh")"
if [[ "${1:-}" == --api-server-only ]]; then
  echo "${out}"
  exit 0
fi
shared="$("${HACK}/control-plane.sh")"
for bin in etcd kubectl kube-controller-manager; do
  [[ -x "${shared}/${bin}" ]] || { echo "control-plane-min: ${shared}/${bin} is missing" >&2; exit 1; }
  ln -sfn "${shared}/${bin}" "${out}/${bin}"
done
echo "${out}"
