#!/usr/bin/env bash
# Builds controller-gen from the Go module proxy (cached, see go-tool.sh) and prints the
# binary's path. make generate and make test's generated-files check run it.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "${CONTROLLER_TOOLS_VERSION:-v0.16.5}"
