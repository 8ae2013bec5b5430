#!/usr/bin/env bash
# Builds (once, cached) the control plane of the oldest Kubernetes the README supports,
# MIN_K8S_VERSION, for test/install, and prints its folder: its own kube-apiserver, and
# the current control plane's etcd, kubectl and kube-controller-manager (what the install
# proves, schemas, admission policies and RBAC, is the API server's; building the rest
# again would cost a cold run about as much as the API server).
set -euo pipefail
HACK="$(dirname "$0")"
shared="$("${HACK}/control-plane.sh")"
SHARE_FROM="${shared}" K8S_VERSION="${MIN_K8S_VERSION:-v1.30.14}" CONTROL_PLANE_BUILD=kube-apiserver exec "${HACK}/control-plane.sh"
