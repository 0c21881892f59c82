#!/usr/bin/env bash
# Slurm, for real: a one-node Slurm (tests/cluster/slurm.sh) runs the
# simulated training job (tests/jobs/programs/train_loop on tests/sim) with
# `srun -n 4`, four ways, as the README's cluster section shows them:
#   A  the README's srun --export line, a job that hangs (rank 1 calls
#      Broadcast where the others call AllReduce #3), ended by scancel;
#   B  nothing set by the job: the repo's TaskProlog injects the shim, and
#      each node writes its own folder under /var/tmp/ncclwatch/<job>/<node>;
#   C  `ncclwatch run --on-stall --on-problem ... -- srun ...` in a batch
#      script, the same hang: the Slurm --on-problem example acts when the
#      shim reports the stall (NCCLWATCH_STALL=5), while the job runs (a
#      job's comment cannot be changed once it has ended), and the job goes
#      on until its time limit ends it;
#   D  the same with rank 2's GPU faulting: the Slurm --on-problem example
#      drains the node.
# Each is diagnosed, the verdict asserted exactly; the ranks are Slurm's
# (SLURM_PROCID). A runs before the TaskProlog is configured: Slurm gives
# variables already in the environment precedence over those that
# --export=ALL,... names, so under the prolog (which sets both in the batch
# script's environment) that line's values would be lost. The shim, ncclwatch and the example scripts are installed
# in /opt/ncclwatch (a tmpfs there, in the test's own mount namespace), as
# the README says.
source "$(dirname "$0")/lib.sh"
cluster_args "$@"
cluster_isolate "$@"
source "$(dirname "$0")/slurm.sh"
need jq jq

mount -t tmpfs -o mode=755 tmpfs /opt
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
install -d -m 755 /opt/ncclwatch
install -m 755 "$NCCLWATCH" "$SHIM" "$SRC/scripts/cluster/slurm/ncclwatch-on-problem.sh" /opt/ncclwatch/
install -d -m 1777 /var/tmp/ncclwatch
slurm_start "$TMP/slurm"

export LD_LIBRARY_PATH=$SIM  # the job's NCCL and CUDA: the simulator
shared=$TMP/shared/traces
mkdir -p "$shared" "$TMP/out" "$TMP/rendezvous" "$TMP/jobs"
show_outputs() {
  if [[ ${CLUSTER_EXIT:-0} -ne 0 ]]; then
    for f in "$TMP"/out/*.out "$TMP/status.out"; do
      [[ -e $f ]] || continue
      echo "--- $f (last lines)" >&2
      tail -n 40 "$f" >&2
    done
  fi
}
cluster_on_exit show_outputs
job=("$BIN/train_loop" --steps 8 --size 4096)

# A batch script: the rendezvous of the job's ranks (the job program's file
# store), then the commands given.
batch() {  # NAME COMMAND-LINE...
  local f=$TMP/jobs/$1.sh
  shift
  {
    echo '#!/bin/bash'
    echo "export JOBRUN_RENDEZVOUS=$TMP/rendezvous/\$SLURM_JOB_ID"
    echo 'mkdir -p "$JOBRUN_RENDEZVOUS"'
    printf '%s\n' "$@"
  } >"$f"
  chmod +x "$f"
  echo "$f"
}
submit() { sbatch --parsable --output="$TMP/out/%j.out" "$@"; }
# The checks every diagnosis of a 4-task srun shares: four processes, ranks
# 0-3 from SLURM_PROCID, on this node.
expect_slurm_ranks() {  # JSON WHAT
  expect_eq "$(jq -c '[.processes[].rank] | sort' <<<"$1")" "[0,1,2,3]" "$2: the ranks"
  expect_eq "$(jq -r '[.processes[].rank_source] | unique | join(",")' <<<"$1")" SLURM_PROCID "$2: where the ranks come from"
  expect_eq "$(jq -r '[.processes[].host] | unique | join(",")' <<<"$1")" "$NODE" "$2: the host"
}
# The root cause of the hang jobs: rank 1's Broadcast where ranks 0, 2, 3
# called AllReduce as collective #3 of the world communicator.
expect_mismatch() {  # JSON TRACES WHAT
  local comm
  comm=$(comm_of "$(trace_of_rank "$2" 0)")
  [[ -n $comm ]] || fail "$3: no communicator in rank 0's trace"
  expect_eq "$(jq -r .schema_version <<<"$1")" 2 "$3: the report's schema version"
  expect_eq "$(jq -r .verdict <<<"$1")" problem "$3: the verdict"
  expect_eq "$(jq -c '[.findings[] | select(.role == "root_cause") | {kind, comm, seq, ranks, field}]' <<<"$1")" \
    "[{\"kind\":\"collective_mismatch\",\"comm\":\"$comm\",\"seq\":3,\"ranks\":[1],\"field\":\"op\"}]" \
    "$3: the root cause"
}

# C first: its time limit (1 minute; slurmctld looks every 30 s) runs while
# the others do.
on_problem=/opt/ncclwatch/ncclwatch-on-problem.sh
c=$(NCCLWATCH_STALL=5 submit --time=1 "$(batch run_timelimit \
  "/opt/ncclwatch/ncclwatch run --on-stall --dir $shared/\$SLURM_JOB_ID --on-problem $on_problem -- srun -n 4 --overcommit ${job[*]} --bug op:1:3")")
echo "C: job $c (ncclwatch run -- srun, hangs until its time limit)"

# A: the README's --export line; the job hangs, and is cancelled once
# `ncclwatch status` sees it stuck.
a=$(submit "$(batch export_line \
  "srun -n 4 --overcommit --export=ALL,LD_PRELOAD=/opt/ncclwatch/libncclwatch.so,NCCLWATCH_DIR=$shared/\$SLURM_JOB_ID ${job[*]} --bug op:1:3")")
echo "A: job $a (srun --export=ALL,LD_PRELOAD=...,NCCLWATCH_DIR=...)"
# Stuck once every waiting rank has waited 2 s: on a busy machine one of
# them may reach AllReduce #3 later than the others, and status names only
# the ranks that have waited long enough (ranks 0,2, then 0,2-3).
stuck() {
  ! "$NCCLWATCH" status --stuck-after 2 "$shared/$a" >"$TMP/status.out" 2>&1 &&
    grep -q '^STUCK: .*ranks 0,2-3 stuck in AllReduce #3' "$TMP/status.out"
}
wait_for 60 "job $a: ncclwatch status says ranks 0,2-3 stuck in AllReduce #3" stuck
scancel "$a"
wait_for 60 "job $a ended by scancel" job_gone "$a"
expect_eq "$(job_state "$a")" CANCELLED "A: the job's state"
expect_eq "$(find "$shared/$a" -name '*.trace' | wc -l)" 4 "A: one trace per task"
json=$("$NCCLWATCH" diagnose --json "$shared/$a") && fail "A: diagnose exited 0"
expect_slurm_ranks "$json" A
expect_mismatch "$json" "$shared/$a" A
expect_in "$("$NCCLWATCH" dump "$(trace_of_rank "$shared/$a" 2)" | grep process_start)" "job=$a" "A: the trace names the Slurm job"

# B: the TaskProlog alone; a healthy job, its traces in the node's folder.
slurm_task_prolog "$TMP/slurm" "$SRC/scripts/cluster/slurm/ncclwatch-task-prolog.sh"
b=$(submit --wait --time=2 "$(batch task_prolog "srun -n 4 --overcommit ${job[*]}")") || fail "B: the job failed: $(cat "$TMP/out/"*)"
echo "B: job $b (the TaskProlog)"
node_dir=/var/tmp/ncclwatch/$b/$NODE
expect_eq "$(find "/var/tmp/ncclwatch/$b" -name '*.trace' | wc -l)" 4 "B: one trace per task"
expect_eq "$(find "$node_dir" -name '*.trace' | wc -l)" 4 "B: all in the node's folder"
expect_eq "$(stat -c %a "$node_dir")" 700 "B: the node folder's mode"
out=$("$NCCLWATCH" diagnose "/var/tmp/ncclwatch/$b"/*) || fail "B: diagnose: $out"
expect_eq "$(head -n1 <<<"$out")" HEALTHY "B: the verdict"
json=$("$NCCLWATCH" diagnose --json "/var/tmp/ncclwatch/$b"/*)
expect_slurm_ranks "$json" B
expect_eq "$(jq -r '[.processes[].end | "\(.how) \(.exit_code)"] | unique | join(",")' <<<"$json")" "exit 0" "B: how the ranks ended"
# Under the prolog, a job that wants its traces elsewhere exports
# NCCLWATCH_DIR in its batch script (the prolog keeps a folder it finds set).
e=$(submit --wait --time=2 "$(batch prolog_shared "export NCCLWATCH_DIR=$shared/\$SLURM_JOB_ID" \
  "srun -n 4 --overcommit ${job[*]} --steps 2")") || fail "the job exporting NCCLWATCH_DIR failed"
expect_eq "$(find "$shared/$e" -name '*.trace' | wc -l)" 4 "job $e: the batch script's NCCLWATCH_DIR kept under the prolog"
[[ ! -e /var/tmp/ncclwatch/$e ]] || fail "job $e: traces in the node's folder too"
# The job opts out with NCCLWATCH=0: no trace.
b0=$(NCCLWATCH=0 submit --wait --time=2 "$(batch opt_out "srun -n 4 --overcommit ${job[*]}")") || fail "the NCCLWATCH=0 job failed"
[[ ! -e /var/tmp/ncclwatch/$b0 ]] || fail "NCCLWATCH=0: the TaskProlog traced the job anyway"
echo "ok: NCCLWATCH=0 job $b0 untraced"

# D: rank 2's GPU faults; srun ends the job, ncclwatch run diagnoses it and
# the --on-problem example drains the node.
cat >"$TMP/jobs/rank2_gpu_fault.sh" <<EOF
#!/bin/sh
[ "\$SLURM_PROCID" = 2 ] && export NCCLSIM_GPU_FAULT=3:ecc
exec ${job[*]}
EOF
chmod +x "$TMP/jobs/rank2_gpu_fault.sh"
d=$(submit --wait --time=2 "$(batch gpu_fault \
  "/opt/ncclwatch/ncclwatch run --dir $shared/\$SLURM_JOB_ID --on-problem $on_problem -- srun -n 4 --overcommit --kill-on-bad-exit=1 $TMP/jobs/rank2_gpu_fault.sh")") &&
  fail "D: the job succeeded"
echo "D: job $d (a GPU fault on rank 2)"
expect_in "$(cat "$TMP/out/$d.out")" "PROBLEM: gpu_fault" "D: ncclwatch run's diagnosis in the job's output"
expect_in "$(cat "$TMP/out/$d.out")" "ncclwatch: running the --on-problem command (1 root cause, ranks 2)" "D: the --on-problem command ran"
report=$(cat "$shared/$d/ncclwatch-report.json")
expect_eq "$(jq -c '[.findings[] | select(.role == "root_cause") | {kind, ranks}]' <<<"$report")" \
  '[{"kind":"gpu_fault","ranks":[2]}]' "D: the report the --on-problem command saved"
node=$(scontrol show node "$NODE")
expect_in "$node" "DRAIN" "D: the node drained"
expect_in "$node" "Reason=ncclwatch: gpu_fault on ranks 2 of job $d" "D: the drain's reason"
expect_in "$(scontrol show job "$d")" "Comment=ncclwatch: PROBLEM: gpu_fault" "D: the job's comment"
scontrol update "NodeName=$NODE" State=RESUME

# C: ended by its time limit.
wait_for 240 "job $c ended by its time limit" job_gone "$c"
expect_eq "$(job_state "$c")" TIMEOUT "C: the job's state"
out=$(cat "$TMP/out/$c.out")
expect_in "$out" "ncclwatch: tracing into $shared/$c" "C: ncclwatch run traced the job"
expect_in "$out" "ncclwatch: a stall was reported; the diagnosis of $shared/$c" "C: ncclwatch run diagnosed the stall"
expect_in "$out" "PROBLEM: collective_mismatch" "C: ncclwatch run's diagnosis in the job's output"
expect_in "$out" "ncclwatch: running the --on-problem command (1 root cause, ranks 1)" "C: the --on-problem command ran"
expect_eq "$(grep -c 'running the --on-problem command' <<<"$out")" 1 "C: and once"
expect_mismatch "$(cat "$shared/$c/ncclwatch-report.json")" "$shared/$c" "C: the report given to --on-problem"
json=$("$NCCLWATCH" diagnose --json "$shared/$c") && fail "C: diagnose exited 0"
expect_slurm_ranks "$json" C
expect_mismatch "$json" "$shared/$c" C
comm=$(comm_of "$(trace_of_rank "$shared/$c" 0)")
expect_in "$(scontrol show job "$c")" "Comment=ncclwatch: PROBLEM: collective_mismatch on communicator ${comm:0:6} #3 (rank 1)" \
  "C: the job's comment"
echo "PASSED: Slurm (--export line, TaskProlog, ncclwatch run, scancel, time limit, --on-problem)"
