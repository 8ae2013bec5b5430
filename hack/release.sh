#!/usr/bin/env bash
# Cuts a release of func-operator (make release VERSION=vX.Y.Z; docs/development.md):
# ko builds cmd/func-operator for linux/amd64 and linux/arm64, pushes the images and
# their index to $KO_DOCKER_REPO/func-operator tagged $VERSION, and resolves config/
# (not its subfolders) with every image pinned by digest; hack/release (Go) splits
# that, as Knative splits its releases, into $RELEASE_DIR (default release/):
#   func-operator-crds.yaml             the CustomResourceDefinitions alone
#   func-operator.yaml                  everything else of config/
#   func-operator-onboarding.yaml       config/namespace/onboard.yaml (kubectl apply -n)
#   func-operator-onboarding-keda.yaml  config/namespace/onboard-keda.yaml
# Nothing is written to $RELEASE_DIR unless every step succeeds: the files are staged
# beside it and moved in by one rename, into a RELEASE_DIR that is missing or empty
# (one holding files is refused). The images are pushed, and tagged $VERSION, by ko
# before the YAMLs are split and checked: should a check fail, the tag exists without
# release files, and cutting the release again moves it to the new index.
# A work tree with changes is refused (the binary's revision would say -dirty):
# RELEASE_ALLOW_DIRTY=1 cuts it anyway, for a trial.
#
# Environment: VERSION (vX.Y.Z or vX.Y.Z-pre, required), KO_DOCKER_REPO (required),
# RELEASE_DIR, KO (the ko binary; default: hack/ko.sh builds it), KO_DEFAULTBASEIMAGE
# (ko's: another base image index than ko.yaml's). Needs nothing but go and ko.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "${ROOT}"
VERSION="${VERSION:-}"
RELEASE_DIR="${RELEASE_DIR:-release}"
PLATFORMS="linux/amd64,linux/arm64"

semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$'
if [[ ! "${VERSION}" =~ ${semver} ]]; then
  echo "release: VERSION=\"${VERSION}\" is not a release version: want vX.Y.Z or vX.Y.Z-pre (semver with a v), e.g. make release VERSION=v0.1.0" >&2
  exit 2
fi
if [[ -z "${KO_DOCKER_REPO:-}" ]]; then
  echo "release: KO_DOCKER_REPO is not set: the registry repository to push the images to, e.g. ghcr.io/fnops" >&2
  exit 2
fi
if [[ -n "$(git status --porcelain 2>/dev/null || true)" ]]; then
  if [[ "${RELEASE_ALLOW_DIRTY:-}" != 1 ]]; then
    echo "release: the work tree has changes (git status): commit them, or set RELEASE_ALLOW_DIRTY=1 for a trial release whose revision says -dirty" >&2
    exit 2
  fi
  echo "release: warning: the work tree has changes; the binary's revision says -dirty" >&2
fi
if [[ -d "${RELEASE_DIR}" && -n "$(ls -A "${RELEASE_DIR}")" ]]; then
  echo "release: RELEASE_DIR ${RELEASE_DIR} is not empty: remove it, or name another, so that no file of an earlier release stays beside this one" >&2
  exit 2
fi
KO="${KO:-$("${ROOT}/hack/ko.sh")}"

# Staged beside RELEASE_DIR, on its filesystem: the last step is one rename.
mkdir -p "$(dirname "${RELEASE_DIR}")"
STAGE="$(mktemp -d "${RELEASE_DIR%/}.stage.XXXXXX")"
trap 'rm -rf "${STAGE}"' EXIT

# The version the binary reports (ko.yaml's ldflags read FUNC_OPERATOR_VERSION).
# --base-import-paths: the image is $KO_DOCKER_REPO/func-operator, not a name with a hash.
echo "release: building ${VERSION} for ${PLATFORMS} into ${KO_DOCKER_REPO}" >&2
# Less of the compiler's CPU goes to its garbage collector (hack/lib/project-module.sh);
# the binaries are the same. Set here, not sourced: the script needs nothing but go and ko.
export GOGC="${GOGC:-400}"
FUNC_OPERATOR_VERSION="${VERSION}" KO_CONFIG_PATH="${ROOT}/ko.yaml" "${KO}" resolve \
  --filename config/ \
  --platform "${PLATFORMS}" \
  --tags "${VERSION}" \
  --base-import-paths \
  > "${STAGE}/resolved.yaml"

mkdir -p "${STAGE}/out"
go run ./hack/release -version "${VERSION}" -resolved "${STAGE}/resolved.yaml" -namespace config/namespace -out "${STAGE}/out"

if [[ -d "${RELEASE_DIR}" ]]; then
  rmdir "${RELEASE_DIR}"
fi
mv "${STAGE}/out" "${RELEASE_DIR}"
echo "release: ${VERSION} written to ${RELEASE_DIR}/:" >&2
ls -1 "${RELEASE_DIR}"/func-operator*.yaml >&2
