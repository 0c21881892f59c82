#!/usr/bin/env bash
# Repeats the job tests whose verdict depends on timing (launcher teardowns,
# walltimes, live snapshots, races between ranks, faults just before an
# exit) on a busy machine, and prints how many runs of each passed.
#
#   scripts/soak-timing.sh [RUNS] [REGEX]
#
# RUNS (default 10) runs of each test matching REGEX (default: every
# timing_jobs test, and the live and liveness cases of hang_jobs and
# status_jobs), one test at a time, while as many busy loops as the machine
# has cores keep every core loaded (SOAK_LOAD=0: no load). Uses the build in
# ${BUILD_DIR:-build} (scripts/build.sh makes it). Exit 0 only when every
# run of every test passed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
runs=${1:-10}
regex=${2:-'^(timing_jobs:|hang_jobs:(a live|a rank|a frozen|a GPU)|status_jobs:status on a live)'}
[[ -f $build/CTestTestfile.cmake ]] || { echo "soak-timing: no build in $build (run scripts/build.sh)" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "soak-timing: RUNS must be a positive number" >&2; exit 2; }

load=()
stop_load() { ((${#load[@]})) && kill "${load[@]}" 2>/dev/null; wait 2>/dev/null; }
trap stop_load EXIT
if [[ ${SOAK_LOAD:-1} != 0 ]]; then
  for ((i = 0; i < $(nproc); i++)); do
    (while :; do :; done) &
    load+=($!)
  done
fi

mapfile -t tests < <(cd "$build" && ctest -N -R "$regex" | sed -n 's/^ *Test *#[0-9]*: //p')
((${#tests[@]})) || { echo "soak-timing: no test matches $regex" >&2; exit 2; }
echo "soak-timing: ${#tests[@]} tests x $runs runs, ${#load[@]} busy loops beside them"
status=0
for t in "${tests[@]}"; do
  # ctest takes a regex: the name matched literally.
  exact="^$(printf '%s' "$t" | sed 's/[][\.*^$(){}+?|]/\\&/g')\$"
  passed=0
  for ((r = 0; r < runs; r++)); do
    (cd "$build" && ctest -R "$exact" >/dev/null 2>&1) && passed=$((passed + 1))
  done
  printf '%3d/%-3d %s\n' "$passed" "$runs" "$t"
  ((passed == runs)) || status=1
done
exit $status
