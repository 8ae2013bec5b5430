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
# Nothing is written to $RELEASE_DIR unless every step succeeds.
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
  echo "release: warning: the work tree has changes; the binary's revision says -dirty" >&2
fi
KO="${KO:-$("${ROOT}/hack/ko.sh")}"

STAGE="$(mktemp -d)"
trap 'rm -rf "${STAGE}"' EXIT

# The version the binary reports (ko.yaml's ldflags read FUNC_OPERATOR_VERSION).
# --base-import-paths: the image is $KO_DOCKER_REPO/func-operator, not a name with a hash.
echo "release: building ${VERSION} for ${PLATFORMS} into ${KO_DOCKER_REPO}" >&2
FUNC_OPERATOR_VERSION="${VERSION}" KO_CONFIG_PATH="${ROOT}/ko.yaml" "${KO}" resolve \
  --filename config/ \
  --platform "${PLATFORMS}" \
  --tags "${VERSION}" \
  --base-import-paths \
  > "${STAGE}/resolved.yaml"

mkdir -p "${STAGE}/out"
go run ./hack/release -version "${VERSION}" -resolved "${STAGE}/resolved.yaml" -namespace config/namespace -out "${STAGE}/out"

mkdir -p "${RELEASE_DIR}"
for f in "${STAGE}"/out/*.yaml; do
  mv -f "${f}" "${RELEASE_DIR}/"
done
echo "release: ${VERSION} written to ${RELEASE_DIR}/:" >&2
ls -1 "${RELEASE_DIR}"/func-operator*.yaml >&2
