#!/usr/bin/env bash
# The demo, on this CPU-only machine: installs what is missing, builds, and
# runs an 8-rank training job on the simulated NCCL and CUDA.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh"

echo
echo "== An 8-rank data-parallel job with pipeline and tensor-parallel groups, on the simulator"
LD_LIBRARY_PATH="$build/sim" "$build/bin/jobrun" -n 8 --timeout 120 -- \
  "$build/bin/train_loop" --steps 6 --pipeline --tensor-parallel --size 100000
