# One rank of torch.distributed.init_process_group("nccl"), as a training
# script starts: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK from the
# environment (env://), the store's timeout NCCLWATCH_TEST_TIMEOUT_S seconds.
# On a machine without a GPU a job whose rendezvous succeeds fails after it,
# on CUDA; one whose rendezvous fails never gets there. Prints how init
# ended, and exits 1 when it failed.
import datetime
import os
import sys

import time

import torch.distributed as dist

# Importing torch takes seconds, and more on a busy machine: the ranks the
# test started (NCCLWATCH_TEST_RANKS of them) wait for each other in the
# launcher's folder (JOBRUN_RENDEZVOUS) before the rendezvous, so that none
# times out before another has even tried.
folder = os.environ.get("JOBRUN_RENDEZVOUS")
started = int(os.environ.get("NCCLWATCH_TEST_RANKS", "0"))
if folder and started > 0:
    open(os.path.join(folder, "imported." + os.environ.get("RANK", "?")), "w").close()
    deadline = time.time() + 60
    while time.time() < deadline:
        if sum(n.startswith("imported.") for n in os.listdir(folder)) >= started:
            break
        time.sleep(0.05)

timeout = float(os.environ.get("NCCLWATCH_TEST_TIMEOUT_S", "3"))
try:
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout))
    print("init_process_group: ok", flush=True)
    dist.destroy_process_group()
except Exception as e:  # what the job would die of
    print("init_process_group failed:", type(e).__name__, str(e).splitlines()[0], flush=True)
    sys.exit(1)
