#!/usr/bin/env bash
# Fails when a package other than pkg/funclib imports knative.dev/func directly: a func
# upgrade must touch one package only.
set -euo pipefail
cd "$(dirname "$0")/.."
adapter="github.com/fnops/func-operator/pkg/funclib"
offenders="$(go list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
  awk -v adapter="${adapter}" '$1 != adapter { for (i = 2; i <= NF; i++) if ($i ~ /^knative\.dev\/func(\/|$)/) { print $1 " imports " $i } }')"
if [[ -n "${offenders}" ]]; then
  echo "only ${adapter} may import knative.dev/func:" >&2
  echo "${offenders}" >&2
  exit 1
fi
