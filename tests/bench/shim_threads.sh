#!/usr/bin/env bash
# What threads of one process share, side by side in one run: shim_loop
# through this build's libncclwatch.so on 1 thread, on 2 threads of one
# process, and in 2 processes (each its own trace file, so nothing shared),
# and the same through BASELINE_SO when given (e.g. a build of main). The
# runs are interleaved, REPS rounds of all rows, so that the machine's load
# weighs on every row alike; each row prints the medians of the runs' wall
# and CPU ns per call (each run: the median of its threads or processes),
# and the 2-thread rows their ratio to 2 processes. The trace folder is
# tmpfs (/dev/shm), the ring the default 16 MiB.
#
#   tests/bench/shim_threads.sh BUILD_DIR [BASELINE_SO] [REPS] [CALLS]
set -euo pipefail
build=${1:?usage: shim_threads.sh BUILD_DIR [BASELINE_SO] [REPS] [CALLS]}
baseline=${2:-}
reps=${3:-9}
calls=${4:-20000000}
loop=$build/bin/shim_loop
shim=$build/lib/libncclwatch.so
shm=$(mktemp -d /dev/shm/ncclwatch-threads-XXXXXX)
out=$(mktemp -d /tmp/ncclwatch-threads-XXXXXX)
trap 'rm -rf "$shm" "$out"' EXIT
export NCCLWATCH_DIR=$shm

rows=("1 thread|--threads 1" "2 threads|--threads 2" "2 processes|--processes 2")
shims=("this shim|$shim")
[[ -n $baseline ]] && shims+=("baseline|$baseline")

echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); $reps rounds, $calls calls a thread"
for _ in $(seq "$reps"); do
  for s in "${shims[@]}"; do
    for r in "${rows[@]}"; do
      rm -rf "${shm:?}"/*
      key="${s%%|*}.${r%%|*}"
      # shellcheck disable=SC2086  # the row's arguments are words
      LD_PRELOAD="${s#*|}" "$loop" --calls "$calls" ${r#*|} |
        awk '{for (i = 1; i < NF; i++) if ($i ~ /_ns_per_call$/) printf "%s ", $(i + 1); print ""}' \
          >>"$out/${key// /_}"
    done
  done
done
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for s in "${shims[@]}"; do
  name=${s%%|*}
  procs_cpu=$(cut -d' ' -f2 "$out/${name// /_}.2_processes" | median)
  procs_wall=$(cut -d' ' -f1 "$out/${name// /_}.2_processes" | median)
  for r in "${rows[@]}"; do
    file="$out/${name// /_}.${r%%|*}"
    file=${file// /_}
    wall=$(cut -d' ' -f1 "$file" | median)
    cpu=$(cut -d' ' -f2 "$file" | median)
    ratio=""
    [[ ${r%%|*} == "2 threads" ]] &&
      ratio=$(awk -v a="$cpu" -v b="$procs_cpu" -v c="$wall" -v d="$procs_wall" \
        'BEGIN {printf "  2 threads / 2 processes: cpu %.2f, wall %.2f", a / b, c / d}')
    printf '%-10s %-12s cpu %7s ns  wall %7s ns%s\n' "$name" "${r%%|*}" "$cpu" "$wall" "$ratio"
  done
done
