#!/usr/bin/env bash
# Builds ko from the Go module proxy into a cache folder stamped with its version,
# and prints the binary's path. A second run with the same version only prints it.
set -euo pipefail

KO_VERSION="${KO_VERSION:-v0.17.1}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/tools/ko-${KO_VERSION}"
STAMP="${OUT}/.stamp"
WANT="ko=${KO_VERSION} go=$(go env GOVERSION)"

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" && -x "${OUT}/ko" ]]; then
  echo "${OUT}/ko"
  exit 0
fi
echo "ko: building ${KO_VERSION}" >&2
mkdir -p "${OUT}"
GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="${OUT}" go install "github.com/google/ko@${KO_VERSION}" >&2
echo "${WANT}" > "${STAMP}"
echo "${OUT}/ko"
