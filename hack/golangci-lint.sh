#!/usr/bin/env bash
# Builds golangci-lint from the Go module proxy into a cache folder stamped with its
# version and the Go toolchain, and prints the binary's path. A second run with the
# same versions only prints it.
set -euo pipefail

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/tools/golangci-lint-${GOLANGCI_LINT_VERSION}"
STAMP="${OUT}/.stamp"
WANT="golangci-lint=${GOLANGCI_LINT_VERSION} go=$(go env GOVERSION)"

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" && -x "${OUT}/golangci-lint" ]]; then
  echo "${OUT}/golangci-lint"
  exit 0
fi
echo "golangci-lint: building ${GOLANGCI_LINT_VERSION}" >&2
mkdir -p "${OUT}"
GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="${OUT}" \
  go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" >&2
echo "${WANT}" > "${STAMP}"
echo "${OUT}/golangci-lint"
