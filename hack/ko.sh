#!/usr/bin/env bash
# Builds ko from the Go module proxy (cached, see go-tool.sh) and prints the binary's path.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" ko github.com/google/ko "${KO_VERSION:-v0.17.1}"
