#!/usr/bin/env bash
# Builds Knative Serving's controller (knative.dev/serving/cmd/controller), at the version
# go.mod requires (func pins it), from the Go module proxy into a cache folder stamped with
# the versions, and prints the binary's path. A second run with the same versions only
# prints the path. test/knative runs it against the tests' API server.
set -euo pipefail
# shellcheck source=lib/sharedmain-controller.sh
source "$(cd "$(dirname "$0")" && pwd)/lib/sharedmain-controller.sh"
VERSION="${SERVING_VERSION:-}" build_controller knative-serving-controller knative.dev/serving knative.dev/serving/cmd/controller
