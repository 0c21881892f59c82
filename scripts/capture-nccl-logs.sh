#!/usr/bin/env bash
# Captures what real NCCL prints on this GPU-less machine for the failures it
# reaches before it needs a GPU, for every release scripts/fetch-nccl.sh
# caches, into tests/data/logs/real/<version>/<case>.log: the corpus that
# tests/unit/log_corpus_test.cc reads. Each file's first line says how it was
# made. Needs python3 (ctypes drives libnccl.so.2 directly).
#
#   scripts/capture-nccl-logs.sh            # every cached release
#   scripts/capture-nccl-logs.sh 2.28.9     # one
#   scripts/capture-nccl-logs.sh --sim      # the simulator's jobs (needs a build in
#                                           # ${BUILD_DIR:-build} and root), into sim/
#
# The simulator (tests/sim/) prints NCCL's lines for the failures real NCCL
# needs a GPU to reach (two ranks on one GPU, version skew, /dev/shm too
# small, a GPU fault, InfiniBand over a low memlock limit); jobrun prefixes
# each rank's lines with "[rank N] " as a launcher does.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/tests/data/logs/real
driver=$(mktemp -d)
trap 'rm -rf "$driver"' EXIT
cat >"$driver/drive.py" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
uid = ctypes.create_string_buffer(128)
r = lib.ncclGetUniqueId(uid)
if r == 0 and sys.argv[2] == "init":
    comm = ctypes.c_void_p()
    lib.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0)
PY
if [[ ${1:-} == --sim ]]; then
  build=${BUILD_DIR:-$repo/build}
  mkdir -p "$repo/tests/data/logs/sim"
  sim() {  # case jobrun-options...
    local name=$1
    shift
    {
      echo "# simulator (tests/sim, NCCL 2.28 format) job: made by scripts/capture-nccl-logs.sh --sim: jobrun -n 4 $* -- train_loop --steps 2"
      LD_LIBRARY_PATH=$build/sim timeout 60 "$build/bin/jobrun" -n 4 --timeout 8 --env NCCL_DEBUG=INFO "$@" \
        -- "$build/bin/train_loop" --steps 2 2>&1 || true
    } >"$repo/tests/data/logs/sim/$name.log"
  }
  sim duplicate_gpu --env-rank 1:JOB_DEVICE=0
  sim version_skew --env-rank 3:NCCLSIM_NCCL_VERSION=2.27.3
  sim small_shm --shm-size 16m
  sim gpu_fault_ecc --env-rank 2:NCCLSIM_GPU_FAULT=0:ecc
  sim ib_memlock --memlock 65536 --env NCCLSIM_IB_HCA=mlx5_0 --env NCCL_SHM_DISABLE=1 --env NCCL_P2P_DISABLE=1
  exit 0
fi
versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  mapfile -t versions < <("$repo/scripts/fetch-nccl.sh" --all | awk '{print $1}')
fi
capture() {  # version case env...
  local v=$1 name=$2 step=$3
  shift 3
  local lib
  lib=$("$repo/scripts/fetch-nccl.sh" "$v" | awk '{print $2}')
  mkdir -p "$out/$v"
  {
    echo "# real libnccl.so.2 $v (PyPI nvidia-nccl wheel), no GPU; made by scripts/capture-nccl-logs.sh: env $* python3 drive.py $step"
    env "$@" timeout 60 python3 "$driver/drive.py" "$lib" "$step" 2>&1 || true
  } >"$out/$v/$name.log"
}
for v in "${versions[@]}"; do
  capture "$v" bad_ifname uid NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=nosuchif
  capture "$v" bad_ifname_warn uid NCCL_DEBUG=WARN NCCL_SOCKET_IFNAME=nosuchif
  capture "$v" no_driver init NCCL_DEBUG=INFO
  capture "$v" no_driver_subsys init NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET
  capture "$v" bad_comm_id uid NCCL_DEBUG=INFO NCCL_COMM_ID=notanaddress
done
