#!/bin/sh
# ncclwatch's Slurm TaskProlog: every task of every job step runs with
# libncclwatch.so in front of LD_PRELOAD, with nothing in the job changed.
#
#   slurm.conf:   TaskProlog=/etc/slurm/ncclwatch-task-prolog.sh
#   each node:    /opt/ncclwatch/libncclwatch.so (and ncclwatch) installed,
#                 install -d -m 1777 /var/tmp/ncclwatch
#
# slurmstepd runs it as the job's user before each task, with the job's
# environment, and sets what it prints ("export NAME=value") in the task's.
# A job (sbatch/srun --export, or its environment) may set:
#   NCCLWATCH=0            no tracing for this job
#   NCCLWATCH_DIR          where its traces go (e.g. a shared file system);
#                          by default each node writes its own folder,
#                          NCCLWATCH_TRACE_ROOT/<job id>/<node name>, which
#                          the shim makes (0700, the job's user's)
#   NCCLWATCH_TRACE_ROOT   default /var/tmp/ncclwatch (node-local)
#   NCCLWATCH_LIB          default /opt/ncclwatch/libncclwatch.so
# A node without the library, or a task that already preloads it, is left
# as it is. It always exits 0: a TaskProlog that fails fails the task, and
# tracing must never do that.
lib=${NCCLWATCH_LIB:-/opt/ncclwatch/libncclwatch.so}
[ "${NCCLWATCH:-1}" = 0 ] && exit 0
[ -r "$lib" ] || exit 0
case ":${LD_PRELOAD:-}:" in
  *":$lib:"*) exit 0 ;;
esac
echo "export LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD}"
if [ -z "${NCCLWATCH_DIR:-}" ]; then
  echo "export NCCLWATCH_DIR=${NCCLWATCH_TRACE_ROOT:-/var/tmp/ncclwatch}/${SLURM_JOB_ID:-nojob}/${SLURMD_NODENAME:-$(hostname -s)}"
fi
exit 0
