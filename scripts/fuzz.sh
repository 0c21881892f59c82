#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, ASan and UBSan into
# ${FUZZ_BUILD_DIR:-build-fuzz} and runs each for SECONDS (default 60), one
# after the other. Exits non-zero on any crash, leak, timeout or
# out-of-memory, naming the input that reproduces it; run the fuzzer named
# with that file as its argument to see it again.
#
#   scripts/fuzz.sh [SECONDS]
#
# Corpora grow under build-fuzz/fuzz/corpus/ from one run to the next; the
# trace and summary seeds are made afresh each run by make_trace_seeds (tiny
# rings) and make_summary_seeds (summaries of those and of small jobs).
set -euo pipefail
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "usage: scripts/fuzz.sh [seconds-per-target]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$repo/build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ with libFuzzer" >&2; exit 2; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [[ ! -f $build/CMakeCache.txt ]]; then
  CC=clang CXX=clang++ cmake -S "$repo" -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNCCLWATCH_BUILD_FUZZERS=ON -DNCCLWATCH_BUILD_TESTS=OFF -DNCCLWATCH_BUILD_BENCHMARKS=OFF -DNCCLWATCH_WERROR=ON
fi
cmake --build "$build" --target ncclwatch_fuzzers -j "$(nproc)"

work=$build/fuzz
bin=$build/bin
rm -rf "$work/seeds" "$work/tmp"
mkdir -p "$work/seeds" "$work/tmp"
"$bin/make_trace_seeds" "$work/seeds/trace_file_fuzzer"
"$bin/make_summary_seeds" "$work/seeds/trace_file_fuzzer" "$work/seeds/summary_file_fuzzer"

# target:maximum input length[:more libFuzzer flags]. A trace seed is ~20
# KiB; a log may hold a line past the 64 KiB explain keeps of one; the job
# fuzzer's input is a program whose every record takes ~40 bytes, so it
# starts long (-len_control=0) instead of growing from a few bytes.
targets=(trace_file_fuzzer:65536 job_trace_fuzzer:4096:-len_control=0 nccl_log_fuzzer:80000
  summary_file_fuzzer:65536)
failed=0
for entry in "${targets[@]}"; do
  IFS=: read -r target max_len extra <<<"$entry"
  corpus=$work/corpus/$target
  artifacts=$work/artifacts/$target
  log=$work/$target.log
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [[ -d $work/seeds/$target ]] && seeds+=("$work/seeds/$target")
  dict=()
  if [[ $target == nccl_log_fuzzer ]]; then
    seeds+=("$repo/tests/fuzz/seeds/logs")
    dict=(-dict="$repo/tests/fuzz/nccl_log.dict")
  fi
  echo "fuzz.sh: $target for ${seconds}s"
  started=$work/.started.$target  # what this run wrote is newer than this
  touch "$started"
  rc=0
  # The targets write their scratch files under TMPDIR: here, cleaned below
  # even when a crash stopped a target before it could clean up.
  TMPDIR=$work/tmp UBSAN_OPTIONS=print_stacktrace=1 "$bin/$target" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -max_len="$max_len" ${extra:+"$extra"} "${dict[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  rm -rf "${work:?}/tmp"/*
  if ((rc != 0)); then
    failed=1
    reproducer=$(find "$artifacts" -type f -newer "$started" \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
      -o -name 'oom-*' \) | head -1)
    echo "fuzz.sh: $target FAILED (exit $rc); reproducer: ${reproducer:-none written}; log: $log" >&2
    grep -E "^==[0-9]+==ERROR|runtime error|SUMMARY|ALARM|out-of-memory" "$log" | head -5 >&2 || true
    [[ -n $reproducer ]] && echo "fuzz.sh: to reproduce: $bin/$target $reproducer" >&2
  else
    grep -E "^stat::number_of_executed_units|cov: " "$log" | tail -2 | sed "s/^/fuzz.sh: $target: /"
  fi
done
exit $failed
