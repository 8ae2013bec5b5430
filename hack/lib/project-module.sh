# Sourced by the tool builds (control-plane.sh, tekton-controller.sh, go-tool.sh) and the
# Makefile (PROJECT_GCFLAGS).

# The compiler spends less CPU collecting garbage with a larger heap (etcd v3.6.5, cold: 194 s
# of CPU at Go's default GOGC=100, 157 s at 400); a GOGC set by the caller wins.
export GOGC="${GOGC:-400}"

# The compiler's flags for the project's graph: make test's go commands, ko.yaml and the
# tools built in that graph use the same, or they share no compiled package. No DWARF: no
# binary built here keeps it (ko.yaml and make test link with -w), and writing it is 8% of
# the compiler's CPU (promtool v0.316.0 from an empty cache: 404 s with it, 371 s without).
PROJECT_GCFLAGS="all=-dwarf=false"

# project_graph prints what a tool built by project_module is built against: a hash of the
# project's go.mod and go.sum, for its cache stamp.
project_graph() {
  local repo
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  echo "project:$(cat "${repo}/go.mod" "${repo}/go.sum" | sha256sum | cut -c1-12)"
}
#
# project_module DIR makes DIR a throw-away Go module that requires what the project's go.mod
# requires, with its replaces (a local replacement folder is copied along). A tool built there
# compiles every package it shares with the tests at the tests' version, with the same flags,
# so the build cache holds one compile of each for both. `go list -deps`: 982 of the 1.35
# control plane's 2,355 packages and 940 of the Tekton controller's 1,332 are the tests' too,
# at the same versions (k8s.io/api and client-go the largest). Measured
# with the tests' packages compiled: the control plane took 12 min 17 s of CPU (19 min cold in
# its own module), the Tekton controller 1 min 44 s (8 min). ko and promtool are not built
# this way: ko v0.17.1 does not compile against the project's newer packages, and promtool
# v0.316.0 would move dozens of the project's requirements.
project_module() {
  local dir="$1" repo rel
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  mkdir -p "${dir}"
  sed 's#^module .*#module example.invalid/toolbuild#' "${repo}/go.mod" > "${dir}/go.mod"
  cp "${repo}/go.sum" "${dir}/go.sum"
  while read -r rel; do
    [[ "${rel}" == ./* ]] || { echo "project_module: replacement ${rel} is not a folder of the project" >&2; return 1; }
    mkdir -p "${dir}/$(dirname "${rel}")"
    cp -r "${repo}/${rel}" "${dir}/${rel}"
  done < <(grep -oE '=> \.\.?/[^ ]+' "${repo}/go.mod" | awk '{print $2}')
}
