# Shared by the cluster tests (tests/cluster/*_test.sh), sourced, never run.
#
# Each test runs real services (Slurm, podman, Prometheus) and real jobs on
# the simulator, as root, sealed off from the machine: cluster_isolate runs
# the rest of the test script in new network, PID and mount namespaces
# (unshare), where
#   - the network is the loopback alone (127.0.0.1, and 127.0.0.2 so that
#     getaddrinfo's AI_ADDRCONFIG, which Slurm uses, sees an address that is
#     not 127.0.0.1): every service listens there, no port can clash with
#     anything else on the machine, and nothing outside can reach them;
#   - /tmp, /dev/shm and /run are private tmpfs mounts: whatever the test
#     and its services write there (runc's state, say) goes with the
#     namespace;
#   - the script is process 1: when it ends, however it ends (ctest's
#     timeout kills unshare, whose child is killed with it), the kernel kills
#     every process left in the namespace, daemons included.
# The script still stops its services itself (cluster_on_exit), and says
# which.
#
# Arguments every test takes (from tests/cluster/CMakeLists.txt):
#   --bin DIR    ncclwatch, jobrun and the job programs
#   --lib DIR    libncclwatch.so
#   --sim DIR    the simulated libnccl.so.2, libcudart.so.13, libcuda.so.1
#   --src DIR    the source tree (the files the repo ships: cluster/)
# Exit status: 0 passed, 1 failed, 77 skipped (ctest's SKIP_RETURN_CODE),
# with the reason on the last line.

set -euo pipefail

BIN="" LIB="" SIM="" SRC=""
cluster_args() {
  while (($#)); do
    case $1 in
      --bin) BIN=$2 ;;
      --lib) LIB=$2 ;;
      --sim) SIM=$2 ;;
      --src) SRC=$2 ;;
      *)
        echo "unknown argument $1" >&2
        exit 2
        ;;
    esac
    shift 2
  done
  if [[ -z $BIN || -z $LIB || -z $SIM || -z $SRC ]]; then
    echo "usage: $0 --bin DIR --lib DIR --sim DIR --src DIR" >&2
    exit 2
  fi
  NCCLWATCH=$BIN/ncclwatch
  SHIM=$LIB/libncclwatch.so
}

skip() {
  echo "SKIPPED: $*"
  exit 77
}

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
  if [[ $1 != "$2" ]]; then
    fail "$3: got '$1', expected '$2'"
  fi
  echo "ok: $3 = '$2'"
}

# expect_in TEXT NEEDLE WHAT: TEXT holds NEEDLE.
expect_in() {
  if [[ $1 != *"$2"* ]]; then
    printf '%s\n' "$1" | sed 's/^/  | /' >&2
    fail "$3: no '$2' in the text above"
  fi
  echo "ok: $3"
}

# need COMMAND PACKAGE: skip the test when COMMAND is missing.
need() {
  command -v "$1" >/dev/null ||
    skip "$1 is not installed (Debian package $2; scripts/install-deps.sh --cluster installs it)"
}

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it
# succeeds; fails the test after SECONDS.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what: not within $limit s"
    sleep 0.2
  done
}

# What runs when the script ends, last registered first: services stopped,
# their logs shown when the test failed.
_on_exit=()
cluster_on_exit() { _on_exit=("$1" "${_on_exit[@]}"); }
_cluster_exit() {
  local rc=$?
  set +e
  export CLUSTER_EXIT=$rc
  for step in "${_on_exit[@]}"; do eval "$step"; done
  exit "$rc"
}

# cluster_isolate "$@": re-runs the calling script in its own namespaces
# (above), then sets up the loopback, /tmp and /dev/shm there; TMP is a
# fresh folder in that /tmp.
cluster_isolate() {
  if [[ ${NCCLWATCH_CLUSTER_ISOLATED:-} != 1 || $$ != 1 ]]; then
    [[ $(id -u) -eq 0 ]] || skip "needs root (namespaces, services)"
    need unshare util-linux
    need ip iproute2
    # Process 1 of the new PID namespace is the script itself (--fork).
    exec unshare --net --pid --mount --fork --kill-child --mount-proc --propagation private \
      env NCCLWATCH_CLUSTER_ISOLATED=1 bash "$0" "$@"
  fi
  ip link set lo up
  ip addr add 127.0.0.2/8 dev lo
  mount -t tmpfs -o mode=1777,size=4g tmpfs /tmp
  mount -t tmpfs -o mode=1777,size=1g tmpfs /dev/shm
  mount -t tmpfs -o mode=755 tmpfs /run
  TMP=$(mktemp -d /tmp/cluster.XXXXXX)
  chmod 755 "$TMP"
  trap _cluster_exit EXIT
  trap 'exit 143' TERM INT
}
