# One rank of torch.distributed.init_process_group("nccl"), as a training
# script starts: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK from the
# environment (env://), the store's timeout NCCLWATCH_TEST_TIMEOUT_S seconds.
# On a machine without a GPU a job whose rendezvous succeeds fails after it,
# on CUDA; one whose rendezvous fails never gets there. Prints how init
# ended, and exits 1 when it failed.
import datetime
import os
import sys

import torch.distributed as dist

timeout = float(os.environ.get("NCCLWATCH_TEST_TIMEOUT_S", "3"))
try:
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout))
    print("init_process_group: ok", flush=True)
    dist.destroy_process_group()
except Exception as e:  # what the job would die of
    print("init_process_group failed:", type(e).__name__, str(e).splitlines()[0], flush=True)
    sys.exit(1)
