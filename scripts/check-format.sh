#!/usr/bin/env bash
# Checks that every tracked C and C++ file (*.cc, *.h, *.c) is formatted as
# the repository's .clang-format says. Lists the files that are not and exits
# 1; exits 0 when all are; exits 2 when it cannot check (no clang-format, not
# a git checkout, a file clang-format cannot read).
#
#   scripts/check-format.sh          check, change nothing
#   scripts/check-format.sh --fix    format the misformatted files in place
#
# clang-format 14 (Debian's clang-format-14) is the reference; another
# version may format some constructs differently. CLANG_FORMAT names another
# binary. Nothing is excluded: every tracked *.cc, *.h and *.c is ours.
set -euo pipefail

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  -h | --help)
    sed -n '2,13s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *)
    echo "usage: $0 [--fix]" >&2
    exit 2
    ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-format: $repo is not a git checkout (the files checked are git's tracked ones)" >&2
  exit 2
fi

clang_format=${CLANG_FORMAT:-}
if [[ -z $clang_format ]]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null; then
      clang_format=$candidate
      break
    fi
  done
fi
if [[ -z $clang_format ]] || ! command -v "$clang_format" >/dev/null; then
  echo "check-format: clang-format not found (apt-get install clang-format-14)" >&2
  exit 2
fi
version=$("$clang_format" --version)
if [[ $version != *"version 14."* ]]; then
  echo "check-format: note: $version; the reference is clang-format 14" >&2
fi

misformatted=()
while IFS= read -r -d '' file; do
  # --dry-run --Werror fails both for a misformatted file and for one it
  # cannot format at all; only the first says "-Wclang-format-violations".
  if out=$("$clang_format" --style=file --dry-run --Werror -- "$file" 2>&1); then
    continue
  fi
  if [[ $out != *"-Wclang-format-violations"* ]]; then
    printf 'check-format: clang-format failed on %s:\n%s\n' "$file" "$out" >&2
    exit 2
  fi
  misformatted+=("$file")
done < <(git ls-files -z -- '*.cc' '*.h' '*.c')

if ((${#misformatted[@]} == 0)); then
  echo "check-format: all tracked C/C++ files are formatted"
  exit 0
fi

if ((fix)); then
  "$clang_format" --style=file -i -- "${misformatted[@]}"
  printf 'check-format: formatted %d file(s):\n' "${#misformatted[@]}"
  printf '  %s\n' "${misformatted[@]}"
  exit 0
fi

printf 'check-format: %d file(s) not formatted as .clang-format says (scripts/check-format.sh --fix formats them):\n' \
  "${#misformatted[@]}" >&2
printf '  %s\n' "${misformatted[@]}" >&2
exit 1
