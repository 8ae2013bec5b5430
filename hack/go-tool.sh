#!/usr/bin/env bash
# Builds a Go tool from the Go module proxy into a cache folder stamped with its version
# and the Go toolchain, and prints the binary's path. A second run with the same
# versions only prints it.
# Usage: [GO_TOOL_TAGS=tag,...] [GO_TOOL_GCFLAGS=flags] hack/go-tool.sh NAME PACKAGE VERSION
# (the binary is named NAME). Tools are built without DWARF, which no one debugging them
# here needs (lib/project-module.sh: 8% of the compiler's CPU); GO_TOOL_GCFLAGS replaces
# the compiler's flags for every package of the tool.
set -euo pipefail

NAME="$1"
PACKAGE="$2"
VERSION="$3"
# shellcheck source=lib/project-module.sh
source "$(dirname "$0")/lib/project-module.sh" # GOGC, PROJECT_GCFLAGS
TAGS="${GO_TOOL_TAGS:-}"
GCFLAGS="${GO_TOOL_GCFLAGS:-${PROJECT_GCFLAGS}}"
CACHE_ROOT="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
OUT="${CACHE_ROOT}/tools/${NAME}-${VERSION}"
STAMP="${OUT}/.stamp"
WANT="${NAME}=${VERSION} go=$(go env GOVERSION) tags=${TAGS} gcflags=${GCFLAGS}"

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT}" && -x "${OUT}/${NAME}" ]]; then
  echo "${OUT}/${NAME}"
  exit 0
fi
echo "${NAME}: building ${VERSION}" >&2
mkdir -p "${OUT}"
GOFLAGS="-mod=mod -trimpath" GOWORK=off CGO_ENABLED=0 GOBIN="${OUT}" go install -tags="${TAGS}" -gcflags="${GCFLAGS}" -ldflags="-s -w" "${PACKAGE}@${VERSION}" >&2
echo "${WANT}" > "${STAMP}"
echo "${OUT}/${NAME}"
