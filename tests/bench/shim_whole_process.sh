#!/usr/bin/env bash
# The shim's cost in a whole process, side by side in one run: shim_loop
# (a program linked against the do-nothing NCCL) plain, through this build's
# libncclwatch.so, and through another one given as BASELINE (e.g. a build
# of main), each REPS times, the median printed; then the first lap of a
# 1 GiB ring, and trace folders on tmpfs (/dev/shm) and on the disk (/tmp),
# and exact instruction counts (ptrace single-step). CPU ns per call are
# the figures to compare on a shared machine; wall ns are printed too.
#
#   tests/bench/shim_whole_process.sh BUILD_DIR [BASELINE_SO] [REPS]
set -euo pipefail
build=${1:?usage: shim_whole_process.sh BUILD_DIR [BASELINE_SO] [REPS]}
baseline=${2:-}
reps=${3:-5}
loop=$build/bin/shim_loop
shim=$build/lib/libncclwatch.so
disk=$(mktemp -d /tmp/ncclwatch-wp-XXXXXX)
shm=$(mktemp -d /dev/shm/ncclwatch-wp-XXXXXX)
trap 'rm -rf "$disk" "$shm"' EXIT

# median of the field $2 over $reps runs of the command after it
median() {
  local field=$1
  shift
  for _ in $(seq "$reps"); do
    rm -rf "${NCCLWATCH_DIR:?}"/*
    "$@" | awk -v f="$field" '{for (i = 1; i < NF; i++) if ($i == f) print $(i + 1)}'
  done | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
row() {  # label, then the environment and command
  local label=$1
  shift
  printf '%-44s cpu %7s ns  wall %7s ns\n' "$label" \
    "$(median cpu_ns_per_call env "$@")" "$(median wall_ns_per_call env "$@")"
}

echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); $reps runs each, medians"
export NCCLWATCH_DIR=$shm
calls=20000000
row "plain (no shim)" "$loop" --calls $calls
row "shim, 16 MiB ring, tmpfs" LD_PRELOAD="$shim" "$loop" --calls $calls
[[ -n $baseline ]] && row "baseline shim, 16 MiB ring, tmpfs" LD_PRELOAD="$baseline" "$loop" --calls $calls
row "shim, 2 threads, 16 MiB ring, tmpfs" LD_PRELOAD="$shim" "$loop" --calls $calls --threads 2
# The first lap of a 1 GiB ring: 8 M slots, 8 M calls never wrap it.
lap=8000000
row "shim, 1 GiB ring first lap, tmpfs" NCCLWATCH_RING_SIZE=1G LD_PRELOAD="$shim" "$loop" --calls $lap
[[ -n $baseline ]] && row "baseline shim, 1 GiB first lap, tmpfs" NCCLWATCH_RING_SIZE=1G LD_PRELOAD="$baseline" "$loop" --calls $lap
export NCCLWATCH_DIR=$disk
row "shim, 16 MiB ring, disk (ext4 /tmp)" LD_PRELOAD="$shim" "$loop" --calls $calls
row "shim, 1 GiB ring first lap, disk" NCCLWATCH_RING_SIZE=1G LD_PRELOAD="$shim" "$loop" --calls $lap
[[ -n $baseline ]] && row "baseline shim, 1 GiB first lap, disk" NCCLWATCH_RING_SIZE=1G LD_PRELOAD="$baseline" "$loop" --calls $lap
# What making the trace file costs at start-up (pre-faulting included).
for dir in "$shm" "$disk"; do
  for size in 16M 1G; do
    rm -rf "${dir:?}"/*
    t=$( { /usr/bin/time -f "%e s wall, %S s sys" env NCCLWATCH_DIR=$dir NCCLWATCH_RING_SIZE=$size \
      LD_PRELOAD="$shim" "$loop" --calls 1 >/dev/null; } 2>&1 | tail -1)
    printf 'start-up, %-4s ring in %-28s %s\n' "$size" "$dir" "$t"
  done
done
export NCCLWATCH_DIR=$shm
echo "instructions per call: plain $("$loop" --instructions 1000 | cut -d' ' -f2)," \
  "shim $(LD_PRELOAD="$shim" "$loop" --instructions 1000 | cut -d' ' -f2)" \
  "${baseline:+, baseline $(LD_PRELOAD="$baseline" "$loop" --instructions 1000 | cut -d' ' -f2)}"
