#!/bin/sh
# An --on-problem command for Slurm, from a batch script:
#
#   ncclwatch run --dir /shared/traces/$SLURM_JOB_ID \
#     --on-problem /opt/ncclwatch/ncclwatch-on-problem.sh -- srun ... python train.py
#
# When ncclwatch finds a problem it keeps the JSON report beside the traces
# (ncclwatch-report.json), puts the verdict in the job's comment (squeue -o
# %k, scontrol show job), and, when the root cause is a node's hardware (a
# GPU fault, a CUDA error the device reported), drains the culprit ranks'
# nodes so that the next job, or this one requeued, avoids them. Draining needs Slurm's operator rights: give the user those, or
# leave that part to an admin's tool reading the comment.
#
# From ncclwatch (decoder/commands/on_problem.h): the report on stdin;
# NCCLWATCH_KIND, NCCLWATCH_RANKS, NCCLWATCH_HOSTS, NCCLWATCH_SUMMARY,
# NCCLWATCH_TRACES in the environment. The hosts are the ranks' host names,
# which are the Slurm node names where NodeName is the host name.
set -u
traces=${NCCLWATCH_TRACES%%:*}
cat >"$traces/ncclwatch-report.json"
scontrol update "JobId=${SLURM_JOB_ID:?not in a Slurm job}" "Comment=ncclwatch: $NCCLWATCH_SUMMARY"
case ",$NCCLWATCH_KIND," in
  *,gpu_fault,* | *,cuda_error,*)
    for node in $(echo "$NCCLWATCH_HOSTS" | tr ',' ' '); do
      scontrol update "NodeName=$node" State=DRAIN \
        "Reason=ncclwatch: $NCCLWATCH_KIND on ranks $NCCLWATCH_RANKS of job $SLURM_JOB_ID"
    done
    ;;
esac
