#!/usr/bin/env bash
# Configures and builds ncclwatch into ${BUILD_DIR:-build}.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The newest NCCL release's headers and library, which the build uses when
# they are newer than the installed NCCL's (cmake/Dependencies.cmake); cached
# outside the tree, fetched once. Without a network the build goes on with the
# installed nccl.h.
if ! "$repo/scripts/fetch-nccl.sh" --newest >/dev/null 2>"${TMPDIR:-/tmp}/ncclwatch-fetch.$$"; then
  echo "build: could not fetch the newest NCCL release ($(tail -1 "${TMPDIR:-/tmp}/ncclwatch-fetch.$$")); building against the installed nccl.h" >&2
fi
rm -f "${TMPDIR:-/tmp}/ncclwatch-fetch.$$"
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build "$build" -j "$(nproc)"
