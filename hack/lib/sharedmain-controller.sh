# Sourced by the builds of the Knative-style controllers the tests run for real
# (tekton-controller.sh, knative-serving-controller.sh).
#
# build_controller NAME MODULE PACKAGE builds PACKAGE (a main package of MODULE, at the version
# the project's go.mod requires, or $VERSION) into a cache folder stamped with the versions,
# and prints the binary's path; a second run with the same versions only prints the path.
# It is built in a throw-away module in the project's module graph (lib/project-module.sh:
# the controller shares most of its compiled packages with the tests, which link the
# controllers' APIs through func): `go get` of the command's package (not only the module)
# puts every dependency of the command in go.sum, which `go build` needs.
build_controller() {
  local name="$1" module="$2" pkg="$3" repo version cache_root out stamp want work
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  # shellcheck source=project-module.sh
  source "${repo}/hack/lib/project-module.sh"
  version="${VERSION:-$(cd "${repo}" && GOFLAGS= go list -m -f '{{.Version}}' "${module}")}"
  cache_root="${FUNC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/func-operator}"
  out="${cache_root}/${name}/$(basename "${module}")-${version}"
  stamp="${out}/.stamp"
  # Built against every requirement of go.mod: a change to it is a new controller.
  want="${name}=${version} graph=$(project_graph) go=$(go env GOVERSION) gcflags=${PROJECT_GCFLAGS}"
  if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" && -x "${out}/controller" ]]; then
    echo "${out}/controller"
    return 0
  fi
  mkdir -p "${out}"
  work="$(mktemp -d)"
  # shellcheck disable=SC2064 # expanded now: work is local
  trap "rm -rf '${work}'" EXIT
  echo "${name}: building ${pkg} ${version} (project module graph)" >&2
  project_module "${work}/build"
  (
    cd "${work}/build"
    export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off
    go get "${pkg}@${version}" >/dev/null 2>&1
    go build -trimpath -gcflags "${PROJECT_GCFLAGS}" -ldflags "-s -w" -o "${out}/controller" "${pkg}"
  )
  echo "${want}" > "${stamp}"
  echo "${name}: done: ${out}/controller" >&2
  echo "${out}/controller"
}
