#!/usr/bin/env bash
# Fails when a tracked file is a build output (an executable or object file, or a file
# .gitignore excludes) or larger than MAX_TRACKED_BYTES: build outputs belong in bin/ or
# a cache, never in git.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_TRACKED_BYTES="${MAX_TRACKED_BYTES:-1048576}" # 1 MiB: the largest source file is ~0.2 MiB

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "verify-tracked-files: not a git work tree, skipped" >&2
  exit 0
fi

bad=()
# Tracked files that .gitignore says are not to be tracked.
while IFS= read -r f; do
  bad+=("${f}: tracked but ignored by .gitignore")
done < <(git ls-files -ci --exclude-standard)

while IFS= read -r -d '' f; do
  [[ -f "${f}" ]] || continue # deleted in the work tree
  size="$(stat -c %s "${f}")"
  if (( size > MAX_TRACKED_BYTES )); then
    bad+=("${f}: ${size} bytes, over the limit of ${MAX_TRACKED_BYTES}")
  fi
  # Executable and object formats: ELF, Mach-O (both byte orders, fat), PE/COFF, ar archives.
  magic="$(head -c 8 "${f}" | od -An -tx1 | tr -d ' \n')"
  case "${magic}" in
    7f454c46*) bad+=("${f}: an ELF binary") ;;
    cffaedfe* | cefaedfe* | feedfacf* | feedface* | cafebabe*) bad+=("${f}: a Mach-O binary") ;;
    4d5a*) bad+=("${f}: a PE/COFF (Windows) binary") ;;
    213c617263683e0a) bad+=("${f}: an ar archive (.a)") ;;
  esac
done < <(git ls-files -z)

if (( ${#bad[@]} > 0 )); then
  echo "build outputs or oversized files are tracked:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
