#!/usr/bin/env bash
# Installs what is missing (scripts/install-deps.sh --cluster: the cluster
# tests' Slurm, podman and Prometheus too, where they can be installed),
# checks the formatting (scripts/check-format.sh),
# builds, and runs the whole test suite (ctest); runs each fuzzer for
# ${FUZZ_SECONDS:-30} s under ASan and UBSan (scripts/fuzz.sh, in
# ${FUZZ_BUILD_DIR:-build-fuzz}); then the test suite again with the decoder,
# the ncclwatch CLI and the Catch2 test binaries built with ASan and UBSan, in
# ${ASAN_BUILD_DIR:-build-asan} (the shim, the simulator and the programs the
# shim is preloaded into are never instrumented: see ncclwatch_sanitize in
# CMakeLists.txt). Fails if the tests left anything in the source tree.
# Before the tests it fetches the real NCCL releases CI tests against
# (scripts/fetch-nccl.sh --ci; tests/real).
# Arguments go to both ctest runs; FUZZ_SECONDS=0 skips the fuzzers. The
# sanitizer pass neither builds nor runs the tests whose subject is never
# instrumented (NCCLWATCH_BUILD_GUEST_TESTS=OFF): the simulator (sim_*), the
# real NCCL releases (real:), and the shim as a guest (preload:, dlsym:,
# gpu_sharing:, cluster:); the decoder's job tests stay in, but for their
# runs from node summaries of a small window (NAME@window16: the same jobs,
# the verdicts compared; a sixth of the pass's time, and the summaries'
# writer and reader run under the sanitizers in summary_jobs, summary_test
# and NAME@summarized16, which judges every trace from its summary made in
# memory). The cluster tests
# (tests/cluster: real Slurm, podman, Prometheus) report themselves skipped,
# with the reason printed at the end, where their packages are missing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
asan_build=${ASAN_BUILD_DIR:-$repo/build-asan}
fuzz_build=${FUZZ_BUILD_DIR:-$repo/build-fuzz}
fuzz_seconds=${FUZZ_SECONDS:-30}
"$repo/scripts/install-deps.sh" --cluster

# What the source tree holds beyond its committed files: changes, untracked
# files, and ignored ones too (a stray *.trace is ignored, and must still be
# seen), less the build folders.
in_git=0
git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1
tree_state() {
  {
    git -C "$repo" status --porcelain --untracked-files=all
    git -C "$repo" ls-files --others --ignored --exclude-standard --directory | sed 's/^/!! /'
  } | awk -v a="${build#"$repo"/}/" -v b="${asan_build#"$repo"/}/" -v c="${fuzz_build#"$repo"/}/" \
    'substr($0, 4, length(a)) != a && substr($0, 4, length(b)) != b && substr($0, 4, length(c)) != c' | LC_ALL=C sort
}
before=""
((in_git)) && before=$(tree_state)

# What failed, said again at the very end (a CI log is often read from its tail).
failures=()
fail() { failures+=("$1"); }
# The tests that failed in a build folder, as ctest left them, on one line.
failed_tests() { tr "\\n" " " 2>/dev/null <"$1/Testing/Temporary/LastTestsFailed.log" | cut -c1-2000; }
echo "== formatting (clang-format, the repo's .clang-format)"
"$repo/scripts/check-format.sh" || fail "formatting (scripts/check-format.sh)"

# Real NCCL releases for tests/real (the CI pair; cached outside the tree,
# fetched once). Without them (no network) those tests report themselves
# skipped, with the reason, rather than passing silently.
echo "== real NCCL releases (scripts/fetch-nccl.sh --ci)"
real_err=$(mktemp)
if real=$("$repo/scripts/fetch-nccl.sh" --ci 2>"$real_err"); then
  export NCCLWATCH_REAL_NCCL="$real"
  printf '%s\n' "$real"
else
  export NCCLWATCH_REAL_NCCL_SKIP="scripts/fetch-nccl.sh --ci failed: $(tr '\n' ' ' <"$real_err")"
  echo "test: SKIPPING the real NCCL release tests: $NCCLWATCH_REAL_NCCL_SKIP" >&2
fi
rm -f "$real_err"

# Both builds go through ccache, with one cache: everything the sanitizer
# pass does not instrument (the shim, the simulator, the job programs) is
# compiled once. Paths are taken relative to the source tree, and the build
# folder left out of the hash, so the two builds' objects match.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$build/ccache} CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=true
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

echo "== build and tests ($build)"
start=$SECONDS
"$repo/scripts/build.sh" -DNCCLWATCH_WERROR=ON "${launcher[@]}"
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@") || fail "tests ($build): $(failed_tests "$build")"
echo "== build and tests: $((SECONDS - start)) s"
# Why a test skipped itself (the cluster tests, without their packages).
grep -h '^SKIPPED: ' "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sed 's/^SKIPPED: /test: skipped: /' || true

if ((fuzz_seconds > 0)); then
  echo "== fuzzers, ${fuzz_seconds} s each, under ASan and UBSan ($fuzz_build)"
  start=$SECONDS
  FUZZ_BUILD_DIR=$fuzz_build "$repo/scripts/fuzz.sh" "$fuzz_seconds" || fail "fuzzers (scripts/fuzz.sh)"
  echo "== fuzzers: $((SECONDS - start)) s"
fi

echo "== the same tests, the decoder and the test binaries under ASan and UBSan ($asan_build)"
start=$SECONDS
BUILD_DIR=$asan_build "$repo/scripts/build.sh" -DNCCLWATCH_WERROR=ON -DNCCLWATCH_SANITIZE=address,undefined \
  -DNCCLWATCH_BUILD_BENCHMARKS=OFF -DNCCLWATCH_BUILD_GUEST_TESTS=OFF "${launcher[@]}"
(cd "$asan_build" && UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  ctest --output-on-failure -j "$(nproc)" -E '^(sim_|real:|preload:|dlsym:|gpu_sharing:|cluster:)|@window16$' "$@") || fail "tests under ASan and UBSan ($asan_build): $(failed_tests "$asan_build")"
echo "== sanitizer build and tests: $((SECONDS - start)) s"

if ((in_git)); then
  left=$(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(tree_state))
  if [[ -n $left ]]; then
    echo "test: the tests left these in the source tree (a test writes only in its own temporary folder):" >&2
    printf '%s\n' "$left" | sed 's/^/  /' >&2
    fail "files left in the source tree"
  fi
fi
if ((${#failures[@]} > 0)); then
  printf 'test: FAILED: %s\n' "${failures[@]}" >&2
  exit 1
fi
echo "test: all passed"
