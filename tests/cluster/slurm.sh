# A one-node Slurm for the tests, sourced after lib.sh: Debian's slurm-wlm
# (slurmctld, slurmd) and munge, run as root inside the test's namespaces.
#
# slurm_start DIR: a munge key generated for the test, munged, slurmctld and
# slurmd, every file of theirs (key, sockets, state, spool, logs) under DIR;
# waits until the node is idle and exports SLURM_CONF for the clients
# (sbatch, srun, squeue, scontrol). The node is this machine under its own
# host name (so a trace's host is the node's name) with CPUs=2, in an
# oversubscribed partition: jobs of 4 tasks run with --overcommit, several
# at once. ProctrackType=proctrack/linuxproc and TaskPlugin=task/none need
# no cgroups. KillWait 10 s.
# slurm_task_prolog DIR FILE: sets TaskProlog=FILE, for the steps started
# from then on (scontrol reconfigure).
# slurm_stop DIR, registered to run when the test ends, stops them all.
#
# Measured on this kind of machine: that is what it takes for Debian's
# daemons to start and run tasks here.

slurm_start() {
  local d=$1
  need munged munge
  need slurmctld slurmctld
  need slurmd slurmd
  need srun slurm-client
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log"
  chmod 700 "$d/munge"
  head -c 1024 /dev/urandom >"$d/munge/munge.key"
  chmod 400 "$d/munge/munge.key"
  cluster_on_exit "slurm_stop '$d'"
  munged --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" --seed-file="$d/munge/munged.seed"
  NODE=$(hostname -s)
  cat >"$d/slurm.conf" <<EOF
ClusterName=ncclwatch-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=10
MinJobAge=600
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
  export SLURM_CONF=$d/slurm.conf
  slurmctld -i
  slurmd -N "$NODE"
  wait_for 60 "the Slurm node $NODE idle" slurm_node_idle
  echo "slurm: slurmctld and slurmd up, node $NODE idle"
}

slurm_task_prolog() {
  echo "TaskProlog=$2" >>"$1/slurm.conf"
  scontrol reconfigure
  wait_for 60 "slurmd to take TaskProlog=$2" slurm_has_prolog "$2"
  echo "slurm: TaskProlog=$2"
}
slurm_has_prolog() { scontrol show config | grep -q "^TaskProlog *= $1\$"; }

slurm_node_idle() { [[ $(sinfo -h -N -o %t 2>/dev/null) == idle ]]; }

# stop_pidfile FILE: ends the process FILE names (if any) and waits for it.
stop_pidfile() {
  local pid
  [[ -s $1 ]] || return 0
  pid=$(<"$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

slurm_stop() {
  local d=$1
  if [[ ${CLUSTER_EXIT:-0} -ne 0 ]]; then
    for log in "$d"/log/*.log; do
      echo "--- $log (last lines)" >&2
      tail -n 30 "$log" >&2 || true
    done
  fi
  scancel --full "--user=$(id -u)" 2>/dev/null || true
  stop_pidfile "$d/slurmd.pid"
  stop_pidfile "$d/slurmctld.pid"
  stop_pidfile "$d/munge/munged.pid"
  echo "slurm: slurmd, slurmctld and munged stopped"
}

# A job's state, and whether it has ended (neither running, pending nor completing).
job_state() { scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
job_gone() { [[ $(job_state "$1") != RUNNING && $(job_state "$1") != PENDING && $(job_state "$1") != COMPLETING ]]; }

# What the traces of a job's tasks say (ncclwatch dump). Each dump is read
# whole before it is searched: a reader that stops early would fail the
# pipeline under pipefail.
comm_of() {  # TRACE: the world communicator the process made
  local records
  records=$("$NCCLWATCH" dump "$1")
  grep -o 'comm_init_begin ncclCommInitRank comm=[0-9a-f]*' <<<"$records" | sed -n '1s/.*comm=//p'
}
trace_of_rank() {  # DIR RANK
  local f records
  for f in "$1"/*.trace; do
    records=$("$NCCLWATCH" dump "$f")
    if grep -q "process_start .* rank=$2(SLURM_PROCID)" <<<"$records"; then
      echo "$f"
      return
    fi
  done
}
