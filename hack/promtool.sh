#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit tester) from the Go module
# proxy (cached, see go-tool.sh) and prints the binary's path. test/monitoring runs it
# on config/monitoring/prometheusrule.yaml. Built without Prometheus's service discovery
# providers (build tag remove_all_sd, Prometheus 3.10 and later): checking and testing
# rules needs none of them, and they are most of the build (cloud SDKs, client-go). And
# without the compiler's optimizations (-N -l): a rule check runs for a second, and the
# build takes a quarter less CPU (from an empty cache: 419 s of CPU optimized, 310 s not).
set -euo pipefail
GO_TOOL_TAGS=remove_all_sd GO_TOOL_GCFLAGS="all=-N -l -dwarf=false" exec "$(dirname "$0")/go-tool.sh" promtool github.com/prometheus/prometheus/cmd/promtool "${PROMTOOL_VERSION:-v0.316.0}"
