#!/usr/bin/env bash
# Containers, for real: Debian's podman with runc (crun refuses this
# machine's hybrid cgroups), no registry: the container's root file system
# is a folder made here from this machine's own files (/bin/sh, cat, ls and
# the shared libraries the job, the shim and ncclwatch need, found with
# ldd). The shim and ncclwatch are mounted read-only from /opt/ncclwatch,
# the job's programs and the simulator read-only too, and NCCLWATCH_DIR is a
# host folder mounted as /traces, as the README's container line says. The
# network is the container's own loopback (--network none), and the limits
# no higher than the machine's (--ulimit nofile=1024:1024, nproc=1024:1024).
#   1. a 4-rank job in --shm-size=32m: NCCL's init fails; diagnosed on the
#      host as /dev/shm (init_failure, subsystem shm, ENOSPC) with the
#      container fix;
#   2. the same job with --ipc=host: healthy; `ncclwatch status` run inside
#      the container while it runs says PROGRESSING;
#   3. a second user's container (another uid) with the same volume can
#      neither read the first user's traces, nor plant a file among them,
#      nor have its own traced job write there.
source "$(dirname "$0")/lib.sh"
cluster_args "$@"
cluster_isolate "$@"
need podman podman
need runc runc
need jq jq

mount -t tmpfs -o mode=755 tmpfs /opt
install -d -m 755 /opt/ncclwatch
install -m 755 "$NCCLWATCH" "$SHIM" /opt/ncclwatch/

# The root file system: the programs' libraries, copied from this machine.
rootfs=$TMP/rootfs
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc,traces,opt/job/bin,opt/job/sim,opt/ncclwatch}
chmod 1777 "$rootfs/tmp"  # podman copies its mode up into the --tmpfs mounted there
for tool in sh cat ls; do cp -L "$(command -v "$tool")" "$rootfs/bin/$tool"; done
libs=$(LD_LIBRARY_PATH=$SIM ldd "$rootfs"/bin/* "$BIN/jobrun" "$BIN/train_loop" "$NCCLWATCH" "$SHIM" "$SIM"/*.so* |
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | grep -v "^$SIM/" | sort -u)
for lib in $libs; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
echo "rootfs: $(find "$rootfs" -type f | wc -l) files, $(du -sh "$rootfs" | cut -f1)"

# podman's own state under $TMP too (and runc's in /run, the test's own):
# no storage, events or runtime files of the machine's are touched.
podman_cmd=(podman --root "$TMP/podman/root" --runroot "$TMP/podman/run" --tmpdir "$TMP/podman/tmp"
  --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc)
cleanup_podman() {
  "${podman_cmd[@]}" rm --all --force >/dev/null 2>&1 || true
  echo "podman: containers removed"
}
cluster_on_exit cleanup_podman
# run USER OPTIONS... -- CMD...: a container of $rootfs as USER (uid:gid),
# with the mounts every run has.
run() {
  local user=$1
  shift
  "${podman_cmd[@]}" run --rm --network none --user "$user" \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --tmpfs /tmp:rw,mode=1777 \
    -v "$BIN:/opt/job/bin:ro" -v "$SIM:/opt/job/sim:ro" -v /opt/ncclwatch:/opt/ncclwatch:ro \
    -e LD_LIBRARY_PATH=/opt/job/sim "$@"
}

# The measured facts the rest builds on: a 32 MiB /dev/shm inside.
shm=$("${podman_cmd[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  --shm-size=32m --rootfs "$rootfs" /bin/cat /proc/mounts | grep ' /dev/shm ')
expect_in "$shm" "size=32768k" "a 32 MiB /dev/shm in the container"

alice=1000:1000 mallory=2000:2000
traces=$TMP/traces
mkdir -p "$traces/small" "$traces/host"
chown -R 1000:1000 "$traces"
chmod 700 "$traces/small" "$traces/host"
job=(/opt/job/bin/jobrun -n 4 --timeout 60 -- /opt/job/bin/train_loop --size 4096)

# 1. --shm-size=32m: NCCL needs one 9.2 MiB segment per local peer.
set +e
out=$(run "$alice" --shm-size=32m -v "$traces/small:/traces" \
  -e LD_PRELOAD=/opt/ncclwatch/libncclwatch.so -e NCCLWATCH_DIR=/traces \
  --rootfs "$rootfs" "${job[@]}" --steps 4 2>&1)
rc=$?
set -e
((rc != 0)) || fail "the job in a 32 MiB /dev/shm succeeded: $out"
expect_in "$out" "unhandled system error" "1: NCCL's init failed in the container"
expect_eq "$(find "$traces/small" -name '*.trace' | wc -l)" 4 "1: one trace per rank on the host volume"
json=$("$NCCLWATCH" diagnose --json "$traces/small") && fail "1: diagnose exited 0"
expect_eq "$(jq -r .verdict <<<"$json")" problem "1: the verdict"
root=$(jq -c '[.findings[] | select(.role == "root_cause")] | first' <<<"$json")
expect_eq "$(jq -r '"\(.kind) \(.subsystem) \(.errno) \(.shm_size) \(.requested)"' <<<"$root")" \
  "init_failure shm ENOSPC 33554432 9637892" "1: the root cause (kind, subsystem, errno, /dev/shm size, segment)"
# The ranks that met ENOSPC: those whose traces hold the failed fallocate.
failed=$(for f in "$traces/small"/*.trace; do
  records=$("$NCCLWATCH" dump "$f")
  if grep -q 'ENOSPC' <<<"$records"; then
    grep -o 'process_start .* rank=[0-9]*' <<<"$records" | grep -o '[0-9]*$'
  fi
done | sort -n | paste -sd, -)
[[ -n $failed ]] || fail "1: no trace records ENOSPC"
expect_eq "$(jq -r '.ranks | sort | join(",")' <<<"$root")" "$failed" "1: the ranks named are those that met ENOSPC"
expect_in "$(jq -r .fix <<<"$root")" "--shm-size" "1: the fix names the container's /dev/shm size"
expect_in "$(jq -r .fix <<<"$root")" "--ipc=host" "1: the fix names --ipc=host"
expect_in "$(jq -r .fix <<<"$root")" "NCCL_SHM_DISABLE=1" "1: and NCCL_SHM_DISABLE=1"

# 2. --ipc=host: the same job, healthy; status inside while it runs.
out=$(run "$alice" --ipc=host -v "$traces/host:/traces" \
  -e LD_PRELOAD=/opt/ncclwatch/libncclwatch.so -e NCCLWATCH_DIR=/traces \
  --rootfs "$rootfs" /bin/sh -c "
    ${job[*]} --steps 100 --step-ms 100 > /tmp/job.out 2>&1 & job=\$!
    i=0
    while [ \$i -lt 150 ]; do
      i=\$((i + 1))
      [ \$(ls /traces | wc -l) -eq 4 ] && /opt/ncclwatch/ncclwatch status /traces > /tmp/status.out 2>&1 &&
        grep -q 'step 5 done' /tmp/job.out && break
      sleep 0.2
    done
    /opt/ncclwatch/ncclwatch status /traces; echo \"status exit \$?\"
    wait \$job; echo \"job exit \$?\"" 2>&1)
expect_in "$out" "PROGRESSING" "2: ncclwatch status inside the container, while the job runs"
expect_in "$out" "4 processes, 1 communicator" "2: status sees every rank"
expect_in "$out" "status exit 0" "2: status's exit code"
expect_in "$out" "job exit 0" "2: the job's exit code"
diag=$("$NCCLWATCH" diagnose "$traces/host") || fail "2: diagnose: $diag"
expect_eq "$(head -n1 <<<"$diag")" HEALTHY "2: the verdict"

# 3. Another user's container: the traces are alice's (0600 files in a
# 0700 folder) and stay so.
expect_eq "$(stat -c '%u %a' "$traces/host" "$traces/host"/*.trace | sort -u | paste -sd' ')" \
  "1000 600 1000 700" "3: the trace folder and files on the host"
before=$(ls -la "$traces/host")
a_trace=$(basename "$(ls "$traces/host"/*.trace | head -n1)")
set +e
out=$(run "$mallory" -v "$traces/host:/traces" --rootfs "$rootfs" /bin/sh -c "
  cat /traces/$a_trace > /dev/null; echo \"read exit \$?\"
  ls /traces > /dev/null; echo \"list exit \$?\"
  echo planted > /traces/ncclwatch.evil.1.1.trace; echo \"plant exit \$?\"
  /opt/ncclwatch/ncclwatch status /traces; echo \"status exit \$?\"
  /opt/ncclwatch/ncclwatch diagnose /traces/$a_trace; echo \"diagnose exit \$?\"" 2>&1)
set -e
expect_in "$out" "read exit 1" "3: another user cannot read a trace"
expect_in "$out" "list exit 2" "3: nor list the folder"
expect_in "$out" "plant exit 2" "3: nor plant a file in it"
expect_in "$out" "status exit 2" "3: ncclwatch status refuses, exit 2"
expect_in "$out" "diagnose exit 2" "3: ncclwatch diagnose refuses, exit 2"
# Its own traced job pointed at alice's folder: the shim refuses the folder
# in one line and the job runs untraced, as it would without the shim.
out=$(run "$mallory" --ipc=host -v "$traces/host:/traces" -e LD_PRELOAD=/opt/ncclwatch/libncclwatch.so \
  -e NCCLWATCH_DIR=/traces --rootfs "$rootfs" "${job[@]}" --steps 2 2>&1) || fail "3: mallory's job failed: $out"
expect_in "$out" "train_loop: done" "3: the other user's job ran"
expect_in "$out" "ncclwatch: not tracing this process: cannot use /traces: Permission denied" \
  "3: the shim said why it does not trace"
expect_eq "$(ls -la "$traces/host")" "$before" "3: alice's trace folder is unchanged"
echo "PASSED: podman (/dev/shm diagnosed, --ipc=host healthy, status inside, another user kept out)"
