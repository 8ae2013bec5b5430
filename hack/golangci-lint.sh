#!/usr/bin/env bash
# Builds golangci-lint from the Go module proxy (cached, see go-tool.sh) and prints the
# binary's path.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "${GOLANGCI_LINT_VERSION:-v2.15.0}"
