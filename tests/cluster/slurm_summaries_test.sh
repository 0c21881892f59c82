#!/usr/bin/env bash
# Slurm and node summaries (issue 25), for real: a one-node Slurm
# (tests/cluster/slurm.sh) runs the simulated training job (tests/jobs/
# programs/train_loop on tests/sim) with `srun -n 4`, the README's --export
# line, a job that hangs (rank 1 calls Broadcast where the others call
# AllReduce #3), ended by scancel once `ncclwatch status` sees it stuck.
# Its traces are then laid out as two nodes' folders would be (ranks 0-1 on
# node-a, 2-3 on node-b: this Slurm has one node, so the nodes are
# folders), and each node folder is summarized by a Slurm step, as the
# README's summary section says:
#     srun --ntasks-per-node=1 ncclwatch summarize FOLDER -o SHARED/NODE.ncws
# `ncclwatch diagnose` over the two summaries must give the verdict of the
# traces, exactly: collective_mismatch, the world communicator, #3, rank 1,
# field op; and `summarize` run by a step on the node itself (its own
# folder, named by its host name) the same.
source "$(dirname "$0")/lib.sh"
cluster_args "$@"
cluster_isolate "$@"
source "$(dirname "$0")/slurm.sh"
need jq jq

mount -t tmpfs -o mode=755 tmpfs /opt
install -d -m 755 /opt/ncclwatch
install -m 755 "$NCCLWATCH" "$SHIM" /opt/ncclwatch/
slurm_start "$TMP/slurm"

export LD_LIBRARY_PATH=$SIM  # the job's NCCL and CUDA: the simulator
shared=$TMP/shared
mkdir -p "$shared/traces" "$shared/summaries" "$TMP/out" "$TMP/rendezvous" "$TMP/jobs"
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

{
  echo '#!/bin/bash'
  echo "export JOBRUN_RENDEZVOUS=$TMP/rendezvous/\$SLURM_JOB_ID"
  echo 'mkdir -p "$JOBRUN_RENDEZVOUS"'
  echo "srun -n 4 --overcommit --export=ALL,LD_PRELOAD=/opt/ncclwatch/libncclwatch.so,NCCLWATCH_DIR=$shared/traces/\$SLURM_JOB_ID ${job[*]} --bug op:1:3"
} >"$TMP/jobs/hang.sh"
chmod +x "$TMP/jobs/hang.sh"
root_cause() { jq -c '[.findings[] | select(.role == "root_cause") | {kind, comm, seq, ranks, field}]' <<<"$1"; }

j=$(sbatch --parsable --output="$TMP/out/%j.out" "$TMP/jobs/hang.sh")
traces=$shared/traces/$j
echo "job $j (srun -n 4, rank 1's Broadcast against AllReduce #3)"
stuck() { ! "$NCCLWATCH" status --stuck-after 2 "$traces" >"$TMP/status.out" 2>&1 && grep -q '^STUCK' "$TMP/status.out"; }
wait_for 60 "job $j stuck (ncclwatch status)" stuck
scancel "$j"
wait_for 60 "job $j ended by scancel" job_gone "$j"
expect_eq "$(find "$traces" -name '*.trace' | wc -l)" 4 "one trace per task"
comm=$(comm_of "$(trace_of_rank "$traces" 0)")
[[ -n $comm ]] || fail "no communicator in rank 0's trace"
want="[{\"kind\":\"collective_mismatch\",\"comm\":\"$comm\",\"seq\":3,\"ranks\":[1],\"field\":\"op\"}]"
raw=$("$NCCLWATCH" diagnose --json "$traces") && fail "diagnose of the traces exited 0"
expect_eq "$(root_cause "$raw")" "$want" "the traces' root cause"

# Two nodes' folders: ranks 0-1 on node-a, 2-3 on node-b.
for rank in 0 1 2 3; do
  node=node-a
  ((rank >= 2)) && node=node-b
  mkdir -p "$TMP/nodes/$node"
  cp "$(trace_of_rank "$traces" "$rank")" "$TMP/nodes/$node/"
done
# Each node's folder summarized by a Slurm step of one task per node.
for node in node-a node-b; do
  srun --ntasks-per-node=1 -N 1 --output="$TMP/out/summarize-$node.out" \
    /opt/ncclwatch/ncclwatch summarize "$TMP/nodes/$node" -o "$shared/summaries/$node.ncws" --host "$node" ||
    fail "srun ncclwatch summarize $node: $(cat "$TMP/out/summarize-$node.out")"
  expect_in "$(cat "$TMP/out/summarize-$node.out")" "wrote $shared/summaries/$node.ncws: 2 trace(s)" "summarize on $node"
done
summed=$("$NCCLWATCH" diagnose --json "$shared/summaries") && fail "diagnose of the summaries exited 0"
expect_eq "$(jq -r .verdict <<<"$summed")" problem "the summaries' verdict"
expect_eq "$(root_cause "$summed")" "$want" "the summaries' root cause"
expect_eq "$(jq -c '[.findings[] | {kind, role, comm, seq, ranks}]' <<<"$summed")" \
  "$(jq -c '[.findings[] | {kind, role, comm, seq, ranks}]' <<<"$raw")" "the summaries' findings, as the traces'"
expect_eq "$(jq -c '[.processes[].rank] | sort' <<<"$summed")" "[0,1,2,3]" "the summaries' ranks"
expect_eq "$(jq -r '[.processes[].path | split(":")[0]] | unique | join(",")' <<<"$summed")" \
  "node-a,node-b" "each process named by the node that summarized it"
out=$("$NCCLWATCH" diagnose "$shared/summaries") && fail "diagnose of the summaries exited 0"
expect_in "$(head -n1 <<<"$out")" "PROBLEM: collective_mismatch on communicator ${comm:0:6} #3 (rank 1)" "the summaries' headline"

# As the README has it: one step on each node of the allocation, each
# summarizing its own traces under its host name.
rm -f "$shared/summaries"/*.ncws
srun --ntasks-per-node=1 --output="$TMP/out/summarize-all.out" \
  sh -c "/opt/ncclwatch/ncclwatch summarize '$traces' -o '$shared/summaries/'\$(hostname -s).ncws" ||
  fail "srun ncclwatch summarize: $(cat "$TMP/out/summarize-all.out")"
expect_eq "$(find "$shared/summaries" -name '*.ncws' | wc -l)" 1 "one summary per node"
expect_in "$(cat "$TMP/out/summarize-all.out")" "wrote $shared/summaries/$NODE.ncws: 4 trace(s)" "summarize on $NODE"
summed=$("$NCCLWATCH" diagnose --json "$shared/summaries") && fail "diagnose of the node's summary exited 0"
expect_eq "$(root_cause "$summed")" "$want" "the node's summary's root cause"
echo "PASSED: Slurm, node summaries (srun --ntasks-per-node=1 ncclwatch summarize, diagnose over the summaries)"
