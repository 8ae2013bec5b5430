#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit tester) from the Go module
# proxy (cached, see go-tool.sh) and prints the binary's path. test/monitoring runs it
# on config/monitoring/prometheusrule.yaml.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" promtool github.com/prometheus/prometheus/cmd/promtool "${PROMTOOL_VERSION:-v0.316.0}"
