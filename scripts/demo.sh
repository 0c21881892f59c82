#!/usr/bin/env bash
# The demo, on this CPU-only machine: installs what is missing, builds, then
# runs an 8-rank training job on the simulated NCCL and CUDA under
# libncclwatch.so: healthy; with rank 5 calling Broadcast where the others
# call AllReduce (the job hangs until jobrun's timeout kills it, as a
# watchdog would); and in a container-sized /dev/shm, where NCCL's init fails
# with "unhandled system error". It diagnoses each, and explains the last one
# from NCCL's own logs too.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh"

traces=$build/demo-traces
rm -rf "$traces"
job=("$build/bin/train_loop" --steps 8 --pipeline --tensor-parallel --size 100000)
run() {  # run NAME TIMEOUT [jobrun options] -- ARGS...: the job under the shim, traces in $traces/NAME
  local name=$1 timeout=$2
  shift 2
  LD_LIBRARY_PATH="$build/sim" "$build/bin/jobrun" -n 8 --timeout "$timeout" \
    --env "LD_PRELOAD=$build/lib/libncclwatch.so" --env "NCCLWATCH_DIR=$traces/$name" "$@" | tail -n 3 || true
}

echo
echo "== 1. A healthy 8-rank job (data parallel + pipeline Send/Recv + tensor-parallel split), traced"
run healthy 120 -- "${job[@]}"
echo "\$ ncclwatch diagnose $traces/healthy"
"$build/bin/ncclwatch" diagnose "$traces/healthy" || true

echo
echo "== 2. The same job where rank 5 calls Broadcast instead of AllReduce at step 3: it hangs"
run broken 10 -- "${job[@]}" --bug op:5:3
echo "\$ ncclwatch diagnose $traces/broken"
"$build/bin/ncclwatch" diagnose "$traces/broken" || true
echo
echo "\$ ncclwatch diagnose --json $traces/broken   (the first finding)"
"$build/bin/ncclwatch" diagnose --json "$traces/broken" | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = d["findings"][0]
print(json.dumps({"verdict": d["verdict"], "first finding": {k: f[k] for k in ("kind", "comm", "seq", "ranks", "field")}}, indent=1))
' || true

echo
echo "== 3. The same job in a container whose /dev/shm is 32 MiB: init fails with 'unhandled system error'"
mkdir -p "$traces/small-shm/logs"
run small-shm 30 --shm-size 32m --env NCCL_DEBUG=INFO --env "NCCL_DEBUG_FILE=$traces/small-shm/logs/nccl.%h.%p.log" \
  -- "${job[@]}"
echo "\$ ncclwatch diagnose $traces/small-shm"
"$build/bin/ncclwatch" diagnose "$traces/small-shm" | sed -n '1,12p' || true
echo
echo "\$ ncclwatch explain $traces/small-shm/logs   (the same, from NCCL's own INFO logs, as if run without the shim)"
"$build/bin/ncclwatch" explain "$traces/small-shm/logs" | sed -n '3,5p' || true
