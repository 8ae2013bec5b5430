#!/usr/bin/env bash
# Builds the Tekton Pipelines controller (github.com/tektoncd/pipeline/cmd/controller)
# from the Go module proxy into a cache folder stamped with the versions, and prints
# the binary's path (the folder's `controller` file). The version is the one go.mod
# requires, so bumping knative.dev/func (and with it Tekton) moves it.
# A second run with the same versions only prints the path.
set -euo pipefail
# shellcheck source=lib/sharedmain-controller.sh
source "$(cd "$(dirname "$0")" && pwd)/lib/sharedmain-controller.sh"
VERSION="${TEKTON_VERSION:-}" build_controller tekton-controller github.com/tektoncd/pipeline github.com/tektoncd/pipeline/cmd/controller
