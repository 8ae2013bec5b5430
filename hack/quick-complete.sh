#!/usr/bin/env bash
# Prints which of the given packages (the quick tier's) run whole under -short: no test of
# theirs can skip there, as none links a package of the project that calls testing.Short()
# (test/envtest skips its control plane under -short; a test that builds the binary skips
# itself). make test runs these once, in the quick tier, and the others again in test-plane.
# A missing sshd cannot hide a test in the quick tier either: make test sets
# FUNC_OPERATOR_REQUIRE_SSHD there too.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
module="$(GOFLAGS= go list -m)"
# The folders of the project's packages that call testing.Short(), in any file, tracked
# or not yet (bin/ holds build outputs only).
short="$(grep -rl --include='*.go' --exclude-dir=bin --exclude-dir=.git 'testing\.Short()' . |
  xargs -r -n1 dirname | sed 's#^\./##' | sort -u | tr '\n' ' ')"
# Each package's test binary (P.test) and everything it links.
go list -test -f '{{.ImportPath}}|{{join .Deps ","}}' "$@" |
  awk -F'|' -v module="${module}" -v short="${short}" '
    BEGIN {
      n = split(short, s, " ")
      for (i = 1; i <= n; i++) isShort[s[i] == "." ? module : module "/" s[i]] = 1
    }
    $1 ~ /\.test$/ {
      pkg = substr($1, 1, length($1) - 5)
      ok = !(pkg in isShort)
      n = split($2, deps, ",")
      for (i = 1; i <= n && ok; i++) { d = deps[i]; sub(/ \[.*/, "", d); if (d in isShort) ok = 0 }
      if (ok) print pkg
    }' | sort
