#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (ctest).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh" -DNCCLWATCH_WERROR=ON
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
