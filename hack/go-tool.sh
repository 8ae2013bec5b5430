#!/usr/bin/env bash
# Builds a Go tool from the Go module proxy into a cache folder stamped with its version
# and the Go toolchain, and prints the binary's path. A second run with the same
# versions only prints it.
# Usage: [GO_TOOL_TAGS=tag,...] hack/go-tool.sh NAME PACKAGE VERSION   (the binary is named NAME)
set -euo pipefail

NAME="$1"
PACKAGE="$2"
VERSION="$3"
TAGS="${GO_TOOL_TAGS:-}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/tools/${NAME}-${VERSION}"
STAMP="${OUT}/.stamp"
WANT="${NAME}=${VERSION} go=$(go env GOVERSION) tags=${TAGS}"

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" && -x "${OUT}/${NAME}" ]]; then
  echo "${OUT}/${NAME}"
  exit 0
fi
echo "${NAME}: building ${VERSION}" >&2
# shellcheck source=lib/project-module.sh
source "$(dirname "$0")/lib/project-module.sh" # GOGC
mkdir -p "${OUT}"
GOFLAGS="-mod=mod -trimpath" GOWORK=off CGO_ENABLED=0 GOBIN="${OUT}" go install -tags="${TAGS}" "${PACKAGE}@${VERSION}" >&2
echo "${WANT}" > "${STAMP}"
echo "${OUT}/${NAME}"
