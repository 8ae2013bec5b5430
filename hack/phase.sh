#!/usr/bin/env bash
# One phase of `make test` (the Makefile runs them side by side, make -j):
#
#   hack/phase.sh run NAME CMD [ARG...]   runs CMD, its output prefixed "[NAME] " and kept in
#                                         $PHASES_DIR/NAME.log, and records when it started,
#                                         how long it took and how it ended; exits as CMD did
#   hack/phase.sh run-recorded NAME CMD   the same, but exits 0 once the result is recorded
#                                         (make test: the summary fails the run)
#   hack/phase.sh summary                 prints every phase recorded (tools, control planes,
#                                         checks, each test package, fuzz) with its start,
#                                         duration and result, and the failures' lines
#
# The summary ends every `make test`, failed or not, so a regression of any phase shows in
# every run's log.
set -euo pipefail

PHASES_DIR="${PHASES_DIR:?set PHASES_DIR to the folder of the records of the phases}"
mkdir -p "${PHASES_DIR}"
[[ -f "${PHASES_DIR}/.start" ]] || date +%s > "${PHASES_DIR}/.start"

run() {
  local name="$1"; shift
  local log="${PHASES_DIR}/${name}.log" start end status=0
  start="$(date +%s)"
  echo "[${name}] start: $*"
  # The pipe keeps the command's exit status (pipefail) and prefixes each line as it comes.
  "$@" 2>&1 | tee "${log}" | sed -u "s/^/[${name}] /" || status=$?
  end="$(date +%s)"
  # The CPU the phase's processes used (user + system, whole seconds): bash's `times`
  # sums every child this shell waited for, and this shell ran nothing else.
  # (`times` in this shell, not in a $(...) subshell, which has no children.)
  local cpu
  times > "${PHASES_DIR}/${name}.times"
  cpu="$(tail -1 "${PHASES_DIR}/${name}.times" | awk '{ split($1, u, "m"); split($2, s, "m"); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')"
  rm -f "${PHASES_DIR}/${name}.times"
  echo "${start} $((end - start)) ${status} ${cpu}" > "${PHASES_DIR}/${name}.time"
  if [[ "${status}" -eq 0 ]]; then
    echo "[${name}] ok in $(fmt $((end - start)))"
  else
    echo "[${name}] FAILED (exit ${status}) in $(fmt $((end - start))); its log: ${log}"
  fi
  return "${status}"
}

fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

summary() {
  local t0 now name start secs status failed=()
  t0="$(cat "${PHASES_DIR}/.start")"
  now="$(date +%s)"
  echo
  echo "make test: $(fmt $((now - t0))) in all; each phase (start after the first, duration, CPU used, result):"
  # Sorted by start, so the table reads as the run went.
  for f in "${PHASES_DIR}"/*.time; do
    [[ -e "${f}" ]] || continue
    read -r start secs status cpu < "${f}"
    echo "${start} ${secs} ${status} ${cpu:-0} $(basename "${f}" .time)"
  done | sort -n | while read -r start secs status cpu name; do
    printf '  %-22s +%-7s %7s  cpu %7s  %s\n' "${name}" "$(fmt $((start - t0)))" "$(fmt "${secs}")" "$(fmt "${cpu}")" \
      "$([[ "${status}" -eq 0 ]] && echo ok || echo "FAILED (exit ${status})")"
  done
  # Each test package's own time, as go test printed it (ok/FAIL lines), longest first,
  # with the phase that ran it (test-quick runs the quick tier's -short tests).
  local pkgs
  pkgs="$(for log in "${PHASES_DIR}"/test-*.log; do
      [[ -e "${log}" ]] || continue
      awk -v phase="$(basename "${log}" .log)" '($1 == "ok" || $1 == "FAIL") && NF >= 3 && $3 ~ /^[0-9.]+s$/ {
        t = $3; sub(/s$/, "", t); sub("github.com/fnops/func-operator/", "", $2); print t, $1, $2, phase }' "${log}"
    done | sort -rn)"
  if [[ -n "${pkgs}" ]]; then
    echo "test packages (go test's time per package), longest first:"
    echo "${pkgs}" | awk 'NR <= 20 { printf "  %-4s %-36s %-15s %8.1fs\n", $2, $3, $4, $1 } NR == 21 { top = $1 } NR > 20 { n++ }
      END { if (n) printf "  ... and %d more, none over %.1fs\n", n, top }'
  fi
  for f in "${PHASES_DIR}"/*.time; do
    [[ -e "${f}" ]] || continue
    read -r start secs status _ < "${f}"
    [[ "${status}" -eq 0 ]] || failed+=("$(basename "${f}" .time)")
  done
  local missing=()
  for want in ${EXPECT:-}; do
    [[ -f "${PHASES_DIR}/${want}.time" ]] || missing+=("${want}")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "phases that did not run: ${missing[*]}"
  fi
  if [[ ${#failed[@]} -gt 0 ]]; then
    for name in "${failed[@]}"; do
      echo
      echo "--- ${name} failed; its failures (whole log: ${PHASES_DIR}/${name}.log):"
      grep -E -e '^(--- FAIL|FAIL|panic:)' -e '^\s+\S+_test\.go:[0-9]+:' "${PHASES_DIR}/${name}.log" | head -60 ||
        tail -30 "${PHASES_DIR}/${name}.log"
    done
    echo
    echo "make test: FAILED: ${failed[*]}${missing[*]:+ (and did not run: ${missing[*]})}"
    return 1
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "make test: FAILED: did not run: ${missing[*]}"
    return 1
  fi
  echo "make test: every phase passed"
}

case "${1:-}" in
  run) shift; run "$@" ;;
  run-recorded) shift; run "$@" || true ;;
  summary) summary ;;
  *) echo "usage: hack/phase.sh run|run-recorded NAME CMD [ARG...] | hack/phase.sh summary" >&2; exit 2 ;;
esac
