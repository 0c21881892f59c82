#include "knowledge/message_catalogue.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace ncclwatch::decoder {
namespace {

// ------------------------------------------------------------ the causes

const MessageCause kCauses[] = {
    {CatalogueCause::kNetwork, "network", true, Area::kNetwork,
     "set NCCL_SOCKET_IFNAME on every rank to the interface that reaches the other nodes (ip -br "
     "addr on each node), or unset it"},
    {CatalogueCause::kBootstrap, "bootstrap", true, Area::kBootstrap,
     "give every rank the same, reachable root address (NCCL_COMM_ID, or the framework's "
     "MASTER_ADDR/MASTER_PORT), check that nothing blocks the port between the nodes, and pin "
     "NCCL_SOCKET_IFNAME to the interface the nodes share"},
    {CatalogueCause::kShm, "shm", true, Area::kShm,
     "give the container a larger /dev/shm (docker run --shm-size=8g; on Kubernetes a "
     "memory-backed emptyDir mounted at /dev/shm) or share the host's (--ipc=host); "
     "NCCL_SHM_DISABLE=1 avoids /dev/shm at the cost of bandwidth between local GPUs"},
    {CatalogueCause::kWorldSize, "world_size", true, Area::kBootstrap,
     "start every rank with the same world size (WORLD_SIZE, --nnodes x --nproc-per-node, the "
     "nranks passed to ncclCommInitRank) and a distinct rank, and give each job its own "
     "NCCL_COMM_ID/MASTER_PORT so two jobs never meet at one root"},
    {CatalogueCause::kGpu, "gpu", true, Area::kGpu,
     "give each rank its own GPU: select the device from the local rank "
     "(torch.cuda.set_device(LOCAL_RANK), CUDA_VISIBLE_DEVICES per rank), and do not start more "
     "processes on a node than it has GPUs"},
    {CatalogueCause::kVersion, "version", true, Area::kVersion,
     "run one NCCL everywhere, and one that the framework was built for: check "
     "LD_LIBRARY_PATH/LD_PRELOAD for a second libnccl.so.2, the nvidia-nccl-cu* wheel against "
     "torch's (python -c 'import torch; print(torch.cuda.nccl.version())'), and that the driver "
     "is at least as new as the CUDA runtime"},
    {CatalogueCause::kVersionSkew, "version_skew", true, Area::kVersion,
     "run the same NCCL on every node: the same container image or wheel (nvidia-nccl-cu*), and "
     "no other libnccl.so.2 earlier on LD_LIBRARY_PATH; check with NCCL_DEBUG=VERSION"},
    {CatalogueCause::kDriverOld, "driver_old", true, Area::kVersion,
     "install a driver at least as new as the CUDA version of the NCCL and framework build (CUDA "
     "13 needs driver 580 or newer, CUDA 12 needs 525 or newer), or use a build for the installed "
     "driver's CUDA; in a container, run it with the NVIDIA container runtime (--gpus all) so the "
     "host driver is mounted"},
    {CatalogueCause::kDriver, "driver", true, Area::kCuda,
     "make the GPU driver visible: run the container with the NVIDIA runtime (docker run --gpus "
     "all, nvidia-container-toolkit), check nvidia-smi inside it and that libcuda.so.1 is on the "
     "library path"},
    {CatalogueCause::kIb, "ib", true, Area::kIb,
     "check the HCA with ibstat/ibv_devinfo (port Active, link up), NCCL_IB_HCA, the locked-memory "
     "limit (ulimit -l unlimited) and that the container sees /dev/infiniband; NCCL_IB_DISABLE=1 "
     "falls back to sockets"},
    // No message names it: init forensics measures the limit (RLIMIT_MEMLOCK).
    {CatalogueCause::kIbMemlock, "ib_memlock", true, Area::kIb,
     "raise the locked-memory limit to unlimited (ulimit -l unlimited; docker run --ulimit "
     "memlock=-1; Slurm: PropagateResourceLimitsExcept=MEMLOCK or a higher limit in slurmd)"},
    {CatalogueCause::kFabric, "fabric", false, Area::kFabric,
     "check that nvidia-fabricmanager (and on GB200, IMEX) is running and healthy on the node "
     "(systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -i -A2 fabric); "
     "NCCL_NVLS_ENABLE=0 works around NVLS meanwhile"},
    {CatalogueCause::kP2p, "p2p", false, Area::kP2p,
     "check GPU peer access on the node (nvidia-smi topo -m; ACS/IOMMU settings in a VM), run "
     "containers with --ipc=host and the same GPUs visible to every local rank; NCCL_P2P_DISABLE=1 "
     "works around it (slower)"},
    {CatalogueCause::kGpuFailed, "gpu_failed", false, Area::kNone,
     "take the GPU (or node) out of the job: check it with nvidia-smi -q -d ECC,ROW_REMAPPER and "
     "dmesg, reset it (nvidia-smi -r, or reboot the node) and report the Xid to the cluster's "
     "administrators; restart the job from its last checkpoint without that GPU"},
    {CatalogueCause::kGpuOom, "gpu_oom", false, Area::kNone,
     "reduce the memory per GPU (batch size, activation checkpointing, sharding) or leave room "
     "for NCCL's buffers (created at init, and by each new communicator): lower NCCL_BUFFSIZE, or "
     "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
    {CatalogueCause::kHostOom, "host_oom", false, Area::kNone,
     "give the job more host memory (the container's memory limit), or use less: fewer "
     "data-loader workers, pinned-memory buffers, or CPU offload"},
    {CatalogueCause::kKernel, "kernel", false, Area::kNone,
     "a kernel of the program (or of a library) faulted: rerun that rank with "
     "CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer to find it; if dmesg shows a hardware Xid "
     "with it, treat it as a GPU fault"},
    {CatalogueCause::kCuda, "cuda", false, Area::kCuda,
     "check the GPU and its driver with nvidia-smi (an Xid in dmesg means the GPU needs a reset), "
     "CUDA_VISIBLE_DEVICES, and that the framework's CUDA matches the driver; rerun with "
     "CUDA_LAUNCH_BLOCKING=1 to find the failing call"},
    {CatalogueCause::kNetRuntime, "net_runtime", false, Area::kNone,
     "the fabric between the nodes failed under the job: check the links and switch ports of the "
     "nodes named (ibstat, ibdiagnet, the switch's port counters, dmesg for mlx5 errors), and "
     "NCCL_IB_TIMEOUT/NCCL_IB_RETRY_CNT for a congested fabric; move the job off a flapping link"},
    {CatalogueCause::kPeerLost, "peer_lost", false, Area::kNone,
     "a peer went away: find the rank that died first (its own output, the launcher's exit "
     "report, dmesg on its node for the OOM killer or an Xid); this rank only lost it"},
    {CatalogueCause::kRendezvous, "rendezvous", false, Area::kNone,
     "make every rank use the same MASTER_ADDR and MASTER_PORT (or --rdzv-endpoint), reachable "
     "from every node, with a port nothing else holds (a previous run may still hold it), and "
     "the same WORLD_SIZE (--nnodes x --nproc-per-node); check that every rank started"},
    {CatalogueCause::kDdpUnused, "ddp_unused", false, Area::kNone,
     "parameters took no part in the loss in this iteration: pass find_unused_parameters=True to "
     "DistributedDataParallel (or use every parameter, or freeze the unused ones before wrapping); "
     "TORCH_DISTRIBUTED_DEBUG=DETAIL names them"},
    {CatalogueCause::kDdpReadyTwice, "ddp_ready_twice", false, Area::kNone,
     "a parameter got its gradient twice in one backward: reentrant activation checkpointing "
     "(use use_reentrant=False), a module run twice per step, or shared weights; use "
     "_set_static_graph() if the graph never changes, or run one forward per backward"},
    {CatalogueCause::kDdpModel, "ddp_model", false, Area::kNone,
     "build the same model on every rank before wrapping it in DistributedDataParallel (the same "
     "config, the same parameters in the same order, the same shapes); '0 params' on the other "
     "side means that rank did not answer: look for why it was late or stuck, and for NCCL errors "
     "before this one"},
    {CatalogueCause::kSizeMismatch, "size_mismatch", false, Area::kNone,
     "make every rank call the same collectives and sends/receives with the same counts and "
     "datatypes (a last batch of another size, or a shape computed per rank, is the usual "
     "cause); TORCH_DISTRIBUTED_DEBUG=DETAIL names the calls"},
    {CatalogueCause::kTorchMismatch, "torch_mismatch", false, Area::kNone,
     "make every rank call the same collectives in the same order with the same shapes; the "
     "ranks that differ took another code path at that point"},
    {CatalogueCause::kUneven, "uneven", false, Area::kNone,
     "give every rank the same number of batches (DistributedSampler with drop_last=True, or the "
     "same dataset length), or wrap the loop in DDP's join() context manager for uneven inputs"},
    {CatalogueCause::kTeardown, "teardown", false, Area::kNone,
     "end cleanly on every rank: call destroy_process_group() once all ranks are past their last "
     "collective (a barrier first), and before exit; a rank that leaves early or hangs in a "
     "collective blocks the others' teardown (TORCH_NCCL_ASYNC_ERROR_HANDLING=1 aborts instead)"},
    // Not a failure: a risk explain reports as a warning (the job stays
    // healthy on its account).
    {CatalogueCause::kTeardownRisk, "teardown_risk", false, Area::kNone,
     "call destroy_process_group() on every rank after its last collective and before it exits; "
     "without it a rank that exits first can leave the others blocked in their own teardown"},
    {CatalogueCause::kWatchdog, "watchdog", false, Area::kNone,
     "a timeout is a symptom: a rank stopped calling collectives (it died, hung, or took another "
     "path); look for the first error of each rank, and TORCH_NCCL_TRACE_BUFFER_SIZE / "
     "TORCH_DISTRIBUTED_DEBUG=DETAIL name the collective"},
    {CatalogueCause::kUsage, "usage", true, Area::kUsage,
     "fix the NCCL call the message names: its communicator (one that is valid, not destroyed, "
     "revoked or aborted), counts, datatype, reduction, root and buffers (device memory of the "
     "communicator's GPU), a config made with NCCL_CONFIG_INITIALIZER, and group calls that "
     "balance; a framework's NCCL error with 'invalid usage' names the same; NCCL_DEBUG=INFO "
     "shows the call"},
    {CatalogueCause::kConfig, "config", true, Area::kConfig,
     "check the NCCL_* variables and ncclConfig_t fields the message names (NCCL_DEBUG=INFO "
     "NCCL_DEBUG_SUBSYS=ENV lists the ones set) and unset those the job does not need: NCCL "
     "ignores, caps or refuses values it cannot use, and says which"},
    {CatalogueCause::kTopology, "topology", true, Area::kTopology,
     "NCCL could not build the node's topology (GPUs, NICs, PCI switches, NVLinks, CPUs): make "
     "/sys visible in the container (it reads /sys/bus/pci and /sys/class/net), check "
     "nvidia-smi topo -m, give every node the same GPUs and NICs, and check NCCL_TOPO_FILE / "
     "NCCL_GRAPH_FILE if set; NCCL_DEBUG_SUBSYS=GRAPH,TOPO shows what it found"},
    {CatalogueCause::kPlugin, "plugin", true, Area::kPlugin,
     "check the plugin NCCL loaded (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN, NCCL_PROFILER_PLUGIN, "
     "libnccl-net*.so on LD_LIBRARY_PATH): its version must fit this NCCL and its own "
     "dependencies must load; NCCL_DEBUG_SUBSYS=INIT,NET names the one in use and why the others "
     "failed (without a plugin NCCL uses its own IB and socket transports, which need an "
     "InfiniBand device or a usable socket interface)"},
    {CatalogueCause::kSystem, "system", true, Area::kSystem,
     "a system call or host allocation failed (the message gives its errno): check the "
     "process's limits (ulimit -n for file descriptors, ulimit -u for threads, the container's "
     "memory and pid limits), that /tmp and /dev/shm are writable, and dmesg"},
    {CatalogueCause::kSocket, "socket", false, Area::kNetwork,
     "a socket between ranks failed: check that the nodes reach each other on the interface "
     "NCCL chose (NCCL_SOCKET_IFNAME on every rank), that no firewall drops the ports, and "
     "whether a peer process died first (its own output)"},
    {CatalogueCause::kProxy, "proxy", false, Area::kProxy,
     "NCCL's proxy thread (which drives the network and local peers for each rank) failed: it "
     "usually follows another rank's death or an earlier NCCL error; find each rank's first "
     "WARN line (NCCL_DEBUG=WARN on every rank) and any rank that died"},
    {CatalogueCause::kInternal, "internal", false, Area::kInternal,
     "NCCL's own consistency check failed: it usually follows an earlier error (look for each "
     "rank's first WARN line); if it is the first, collect NCCL_DEBUG=INFO logs of every rank "
     "and report it to NVIDIA/nccl with the NCCL version, or try the newest release"},
    {CatalogueCause::kCollnet, "collnet", true, Area::kCollnet,
     "CollNet (in-network reductions, SHARP) needs its plugin (nccl-rdma-sharp-plugins) and a "
     "fabric that supports it on every node: check the plugin's log, or turn it off with "
     "NCCL_COLLNET_ENABLE=0"},
    {CatalogueCause::kGdr, "gdr", true, Area::kGdr,
     "GPUDirect RDMA or GDRCopy failed: check that the nvidia-peermem (or DMA-BUF support) and "
     "gdrdrv kernel modules are loaded and fit the driver, or turn them off "
     "(NCCL_GDRCOPY_ENABLE=0, "
     "NCCL_NET_GDR_LEVEL=LOC)"},
    {CatalogueCause::kNvml, "nvml", true, Area::kNvml,
     "NCCL could not use NVML (libnvidia-ml.so.1, the driver's management library): run the "
     "container with the NVIDIA runtime so the host driver's libraries are mounted, check that "
     "nvidia-smi works there and that the library matches the driver"},
    {CatalogueCause::kDeviceApi, "device_api", true, Area::kDeviceApi,
     "NCCL's device-side communication (the device API of 2.28+: GIN, one-sided RMA, symmetric "
     "memory windows, memory suspend) was refused: check the feature's requirements in the "
     "release notes (driver, NIC with DMA-BUF or GDAKI, CUDA 12.5+ for RMA), register windows "
     "the same way on every rank, or leave it off (NCCL_GIN_ENABLE=0)"},
    {CatalogueCause::kJaxTaskLost, "jax_task_lost", false, Area::kNone,
     "a JAX task stopped answering the coordination service (it crashed, was killed by the OOM "
     "killer or the scheduler, or hung hard): read that task's own log up to where it stopped, "
     "and its node's dmesg and scheduler events (preemption, eviction); every other task only "
     "reports it. A longer heartbeat_timeout_seconds (jax.distributed.initialize) only makes the "
     "others wait longer"},
    {CatalogueCause::kJaxLeaderLost, "jax_leader_lost", false, Area::kNone,
     "the coordination service runs in JAX process 0 (the coordinator_address of "
     "jax.distributed.initialize): when it stops or restarts every task fails; read process 0's "
     "log for its first error, and the scheduler's events for its node"},
    {CatalogueCause::kJaxRendezvous, "jax_rendezvous", false, Area::kNone,
     "start every task with the same coordinator_address (reachable from every node, on a port "
     "nothing else holds), the same num_processes and a distinct process_id (or let "
     "jax.distributed.initialize detect them from the cluster), and check that every task "
     "started; initialization_timeout bounds the wait"},
    {CatalogueCause::kJaxBarrier, "jax_barrier", false, Area::kNone,
     "some tasks never reached the point the others waited at (the barrier or key named): they "
     "died, hung, started late or took another code path; read the logs of the tasks named as "
     "timed out, and make every task run the same steps"},
    {CatalogueCause::kC10dUsage, "c10d_usage", false, Area::kNone,
     "fix the torch.distributed call the message names: init_process_group once per process, "
     "before any collective, with a backend this build has, a world size and rank every process "
     "agrees on and a timeout as a timedelta; groups made with new_group/split_group from ranks "
     "of the world, the same on every rank; the error's own words say which argument"},
    {CatalogueCause::kTorchNccl, "torch_nccl", false, Area::kNone,
     "PyTorch's NCCL process group reported an NCCL call or communicator failing: its words name "
     "the call; why is in NCCL's own WARN line (rerun with NCCL_DEBUG=WARN, or read the "
     "'Last error:' PyTorch prints) and in the first error of each rank: an abort, a destroyed or "
     "invalidated communicator, or a failed call usually follows another rank's failure"},
    {CatalogueCause::kTorchBarrier, "torch_barrier", false, Area::kNone,
     "some ranks never reached the barrier (monitored_barrier names them): they died, hung, or "
     "took another code path before it; read those ranks' own logs, and make every rank run the "
     "same steps"},
    {CatalogueCause::kDdpMisc, "ddp_misc", false, Area::kNone,
     "check how DistributedDataParallel is built and used: the constructor's arguments (process "
     "group or device mesh, bucket sizes, static_graph, find_unused_parameters, "
     "gradient_as_bucket_view), the communication hooks and join() handlers registered, and that "
     "gradients keep the layout DDP expects; the message names which"},
    {CatalogueCause::kLibrary, "library", true, Area::kVersion,
     "load the libnccl.so.2 the framework was built with: remove other NCCL builds from "
     "LD_LIBRARY_PATH/LD_PRELOAD, or install the matching nvidia-nccl-cu* wheel"},
    {CatalogueCause::kProcessKilled, "process_killed", false, Area::kNone,
     "a process of the job was killed by a signal (-9: SIGKILL, most often the kernel's OOM "
     "killer or the scheduler; -11: a segmentation fault; -6: an abort): read dmesg on that node "
     "for the OOM killer or an Xid, and the rank's own output for its last lines (DeepSpeed's "
     "--enable_each_rank_log keeps one file per rank); the launcher stopped the other ranks"},
    {CatalogueCause::kDeepspeedInit, "deepspeed_init", false, Area::kNone,
     "initialise DeepSpeed's communication once in every process before anything uses it: "
     "deepspeed.init_distributed() (or deepspeed.initialize with dist_init_required left on), "
     "started by one launcher (deepspeed, torchrun or mpirun, not two of them) so that RANK, "
     "WORLD_SIZE and MASTER_ADDR/MASTER_PORT agree with what MPI reports"},
    {CatalogueCause::kModelParallel, "model_parallel", false, Area::kNone,
     "check the model-parallel layout: tensor x pipeline (x context) parallel sizes must divide "
     "the number of processes (Megatron: --tensor-model-parallel-size, "
     "--pipeline-model-parallel-size, --context-parallel-size; the rest is data parallel) or, in "
     "SGLang, equal it (--tp-size x --pp-size GPUs); and set the parallel groups up once per "
     "process, after torch.distributed and before the model is built "
     "(initialize_model_parallel); the message names the sizes or the group"},
    // Not NCCL's init (SGLang checks after it): the framework's refusal, in
    // the catalogue's words, as for c10d_usage.
    {CatalogueCause::kGpuBusy, "gpu_busy", false, Area::kNone,
     "another process holds memory on one of the job's GPUs (a server or job still running, or "
     "two servers sharing GPUs): find it with nvidia-smi (its pid and memory) on each GPU of the "
     "job and stop it, or give this job GPUs of its own (CUDA_VISIBLE_DEVICES); SGLang's check "
     "can be turned off (SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1), at the risk of running out of "
     "memory on the fuller GPU"},
    {CatalogueCause::kLoader, "loader", true, Area::kLoader,
     "the dynamic loader could not load the program's libraries: list what is missing or too old "
     "with ldd on the module it names, then install it or put its folder first on "
     "LD_LIBRARY_PATH (a libstdc++ too old for a wheel: the one the Python environment ships, or "
     "a newer toolchain's); in a container, the driver's libraries come from the host through the "
     "NVIDIA container toolkit (--gpus all)"},
    {CatalogueCause::kNetNotice, "net_notice", false, Area::kNone,
     "nothing to do for this event itself: the port or the subnet manager changed something NCCL "
     "goes on after; if a failure follows it on the same port (a completion error, a fatal "
     "event), check the port with ibstat and the subnet manager's log"},
    {CatalogueCause::kSettingIgnored, "setting_ignored", false, Area::kNone,
     "NCCL went on without the setting (its default, or the fallback the message names): set "
     "it to a value NCCL accepts (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV lists the ones set) or "
     "unset it, so that the job runs as it was meant to"},
};

// ------------------------------------------------------------ the messages
//
// Specific before general: the first that matches wins.

const std::vector<CatalogueMessage>& Table() {
  static const std::vector<CatalogueMessage> table = {
      // --- NCCL, initialisation
      {"nccl.bootstrap.no_interface",
       R"(no socket interface found|NET/Socket ?: no interface found|No usable listening interface|)"
       R"((?:^|\s)\S+ : no interface found)",
       "NCCL 2.4-2.32 bootstrap.cc / net_socket.cc", MessagePhase::kInit, CatalogueCause::kNetwork,
       false,
       "found no network interface for NCCL's bootstrap (NCCL_SOCKET_IFNAME matches none, or "
       "no "
       "interface is up)",
       nullptr},
      {"nccl.bootstrap.invalid_comm_id", R"(Invalid NCCL_COMM_ID)", "NCCL 2.4-2.32 bootstrap.cc",
       MessagePhase::kInit, CatalogueCause::kBootstrap, false,
       "was given an NCCL_COMM_ID that is not an address and port", nullptr},
      {"nccl.socket.getaddrinfo", R"(error encountered when getting address info)",
       "NCCL 2.4-2.32 misc/socket.cc", MessagePhase::kInit, CatalogueCause::kBootstrap, false,
       "could not resolve the root's host name (NCCL_COMM_ID or MASTER_ADDR)", nullptr},
      {"nccl.socket.connect",
       R"([Cc]onnect to \S+ (?:failed|returned)|Call to connect returned|[Cc]onnect(?:ion)? to \S+ timed out|socket(?:Start|Poll)Connect: exceeded (?:retries|timeouts))",
       "NCCL 2.4-2.32 misc/socket.cc (socketStartConnect, socketPollConnect; 'exceeded "
       "timeouts' since 2.18, 'exceeded error retry count' since 2.26)",
       MessagePhase::kAny, CatalogueCause::kBootstrap, false,
       "could not connect to another rank or to the bootstrap root",
       R"([Cc]onnect(?:ion)? to (\S+?)[,\s])"},
      {"nccl.shm.segment",
       R"(Error while (?:creating|attaching to) shared memory segment|failed to extend \S*shm|unable to allocate shared memory|Cannot allocate memory.*/dev/shm|/dev/shm.*(?:No space|Cannot allocate))",
       "NCCL 2.7-2.9 shmutils.cc ('failed to extend'), 2.10-2.32 ('Error while "
       "creating/attaching "
       "to shared memory segment')",
       MessagePhase::kInit, CatalogueCause::kShm, false,
       "could not create NCCL's shared-memory segment in /dev/shm", nullptr},
      {"nccl.bootstrap.nranks_mismatch", R"(mismatch in (?:rank count|info) from procs)",
       "NCCL 2.4-2.21 bootstrap.cc ('mismatch in rank count from procs'), 2.22+ ('mismatch in "
       "info from procs, nranks ...'): the root, on ranks reporting different nranks",
       MessagePhase::kInit, CatalogueCause::kWorldSize, false,
       "was started with a different number of ranks than the others (nranks disagrees)", nullptr},
      {"nccl.bootstrap.truncated", R"(Message truncated : received)",
       "NCCL 2.12-2.30 bootstrap.cc (bootstrapRecv and its peers' exchange)", MessagePhase::kInit,
       CatalogueCause::kWorldSize, false,
       "received a bootstrap message of another size than it expected: ranks of different "
       "jobs, "
       "sizes or NCCL versions met at one root",
       nullptr},
      {"nccl.bootstrap.rank_twice", R"(ranks has already checked in)",
       "NCCL 2.4-2.32 bootstrap.cc (the root, when a rank checks in twice)", MessagePhase::kInit,
       CatalogueCause::kWorldSize, false,
       "checked in at the bootstrap root as a rank another process had already claimed (two "
       "ranks with one rank number, or two jobs at one root)",
       nullptr, Area::kBootstrap},
      {"nccl.gpu.duplicate", R"(Duplicate GPU detected|Multiple Ranks are using the same GPU)",
       "NCCL 2.5-2.28 init.cc ('Duplicate GPU detected'), 2.30 ('Multiple Ranks are using the "
       "same "
       "GPU/Partition')",
       MessagePhase::kInit, CatalogueCause::kGpu, false,
       "shares a GPU with another rank of the same communicator", nullptr},
      {"nccl.version.mismatch", R"(Mismatched NCCL version|NCCL version mismatch)",
       "NCCL 2.23-2.30 init.cc ('Mismatched NCCL version detected : rank %d version %d rank %d "
       "version %d'); before 2.23 a skew shows as a truncated bootstrap message or a hang",
       MessagePhase::kInit, CatalogueCause::kVersionSkew, false,
       "runs another NCCL version than its peers", nullptr},
      {"nccl.cuda.driver_insufficient",
       R"(driver version is insufficient|cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)",
       "NCCL 2.4-2.32 (any CUDA call), CUDA runtime", MessagePhase::kAny,
       CatalogueCause::kDriverOld, false,
       "has a CUDA driver older than the CUDA runtime (or none at all)", nullptr},
      {"nccl.cuda.no_libcuda", R"(Failed to find CUDA library|libcuda\.so[.\d]*: cannot open)",
       "NCCL 2.13-2.18 misc/cudawrap.cc (real 2.18.3 output in real/)", MessagePhase::kInit,
       CatalogueCause::kDriver, false,
       "could not load the GPU driver's library (libcuda.so): no driver in this container or "
       "machine",
       nullptr},
      {"nccl.ib.size_mismatch", R"(NET/IB.* collective mismatch error)",
       "NCCL 2.4-2.19 transport/net_ib.cc (the receiver, when a peer sends more than it posted; "
       "'peer %s' since 2.10)",
       MessagePhase::kRuntime, CatalogueCause::kSizeMismatch, false,
       "received more bytes from a peer over InfiniBand than the operation expected: the two ranks "
       "disagree on the operation's size",
       R"(peer (\S+) collective mismatch)", Area::kNetIb},
      {"nccl.ib.completion",
       R"(NET/IB ?: ?Got completion (?:from peer|with error)|NET/IB.*(?:status=|status )(?:12|5)\b|IBV_WC_RETRY_EXC_ERR|transport retry counter exceeded)",
       "NCCL 2.4-2.32 transport/net_ib.cc (completion with error, with its status since 2.12)",
       MessagePhase::kRuntime, CatalogueCause::kNetRuntime, false,
       "got an InfiniBand/RoCE completion error: a message to a peer failed on the fabric "
       "(status 12 is retries exhausted: a link, a switch, or a peer that went away)",
       R"(from peer (\S+?)[\s,])", Area::kNetIb},
      // The events ibv_event_type_str names that are no error (rdma-core
      // libibverbs/verbs.c): NCCL printed each as a WARN before 2.30.
      {"nccl.ib.async_notice",
       R"(Got (?:non-fatal )?async event : (?:GID table change|LID change|P_Key change|SM changed|port active|client reregistration|communication established|send queue drained|path migrated|last WQE reached|SRQ limit reached)\b)",
       "NCCL 2.4-2.29 transport/net_ib.cc ('Got async event : %s') with rdma-core's "
       "ibv_event_type_str of an event that is no error",
       MessagePhase::kRuntime, CatalogueCause::kNetNotice, false,
       "was told of an InfiniBand port event NCCL goes on after (no error)", nullptr, Area::kNetIb},
      {"nccl.ib.flid_fallback",
       R"(remote FLID configured as zero even when endpoints are on different subnets)",
       "NCCL 2.22-2.32 transport/net_ib.cc, net_ib/connect.cc ('Warning: remote FLID configured "
       "as zero even when endpoints are on different subnets, using dlid as fallback')",
       MessagePhase::kAny, CatalogueCause::kNetNotice, false,
       "found a peer across subnets with no FLID and routed to it by its LID instead (no error)",
       nullptr, Area::kNetIb},
      {"nccl.ib.async_event", R"(Got (?:non-fatal )?async event|NET/IB ?: ?\S+ async fatal event)",
       "NCCL 2.4-2.21 transport/net_ib.cc ('Got async event : %s', with the device since "
       "2.21), "
       "2.30 "
       "net_ib/common.cc "
       "('async fatal event', 'Got non-fatal async event')",
       MessagePhase::kRuntime, CatalogueCause::kNetRuntime, false,
       "got an InfiniBand async event (a port or device error)", nullptr, Area::kNetIb},
      {"nccl.ib.gid_change", R"(NET/IB ?: .*(?:during GID change|after GID-change event))",
       "NCCL 2.31-2.32 transport/net_ib/common.cc (the handler of a port's GID change event)",
       MessagePhase::kRuntime, CatalogueCause::kNetRuntime, false,
       "had the GID (the address) of an InfiniBand/RoCE port change under the job and could not "
       "take the new one (NCCL marks the device failed)",
       nullptr, Area::kNetIb, true},
      {"nccl.ib.port_recovery",
       R"(NET/IB ?: .*(?:[Pp]ort recovery|[Rr]esiliency|[Pp]robe completion|[Pp]robing QP|)"
       R"([Oo]utstanding probe|Dummy receive completion))",
       "NCCL 2.31-2.32 transport/net_ib/p2p_resiliency*.cc (moving a connection off a failed "
       "port)",
       MessagePhase::kRuntime, CatalogueCause::kInternal, false,
       "had NCCL's InfiniBand port recovery (moving traffic off a failed port, 2.31+) fail one of "
       "its own checks, after a port failed",
       nullptr, Area::kNetIb, true},
      {"nccl.ib.reg_mr", R"(ibv_reg_mr|ibv_reg_dmabuf_mr)", "NCCL 2.4-2.32 misc/ibvwrap.cc",
       MessagePhase::kAny, CatalogueCause::kIb, false,
       "could not register memory with the InfiniBand HCA (often a low RLIMIT_MEMLOCK)", nullptr},
      {"nccl.ib.verbs", R"(NET/IB|NET/IBext|Call to ibv_\w+ failed|\bibv_\w+ failed|mlx5)",
       "NCCL 2.4-2.32 transport/net_ib.cc, misc/ibvwrap.cc", MessagePhase::kInit,
       CatalogueCause::kIb, true, "hit an InfiniBand verbs failure", nullptr},
      {"nccl.fabric.not_initialized", R"(system not yet initialized)",
       "NCCL 2.17-2.32 transport/nvls.cc (CUDA error 802 from the multicast API)",
       MessagePhase::kAny, CatalogueCause::kFabric, false,
       "found the NVLink fabric not ready (the Fabric Manager has not initialised it)", nullptr},
      {"nccl.fabric.nvls", R"(NVLS|NVLink SHARP|(?i:fabric manager)|\bIMEX\b|cuMulticast|NVSwitch)",
       "NCCL 2.17-2.32 transport/nvls.cc, CUDA multicast", MessagePhase::kAny,
       CatalogueCause::kFabric, true, "could not use the NVLink fabric (NVSwitch, NVLS multicast)",
       nullptr},
      {"nccl.p2p.ipc",
       R"(P2P/IPC|failed to peer with device|cudaIpcOpenMemHandle|cudaIpcGetMemHandle|peer access|peer mapping|cuMemImportFromShareableHandle|IPC handle)",
       "NCCL 2.4-2.32 transport/p2p.cc", MessagePhase::kAny, CatalogueCause::kP2p, true,
       "could not map another local GPU's memory (P2P / CUDA IPC)", nullptr},
      // --- NCCL, a running job
      {"nccl.remote_error", R"(remote process exited or there was a network error|ncclRemoteError)",
       "NCCL 2.13-2.32 ncclGetErrorString (ncclRemoteError)", MessagePhase::kAny,
       CatalogueCause::kPeerLost, false,
       "lost a peer: NCCL says the remote process exited or the network failed", nullptr,
       Area::kNet},
      {"nccl.socket.closed", R"(Connection closed by remote peer|Connection reset by peer)",
       "NCCL 2.4-2.32 misc/socket.cc", MessagePhase::kAny, CatalogueCause::kPeerLost, false,
       "lost a socket connection to a peer (the process there died, or the network failed)",
       R"((?:peer|from) (\S+?<\d+>|\d+\.\d+\.\d+\.\d+:?\d*))", Area::kNetSocket},
      {"nccl.socket.recv",
       R"(Call to recv from \S+ failed|socketProgress(?:Opt)?: .*failed|socket progress error|NET/Socket ?: ?socket)",
       "NCCL 2.10-2.32 misc/socket.cc ('Call to recv from %s failed'), transport/net_socket.cc",
       MessagePhase::kRuntime, CatalogueCause::kPeerLost, false,
       "failed to talk to a peer over a socket", nullptr, Area::kNetSocket},
      {"nccl.proxy.error",
       R"(\[Service thread\] Error encountered progressing|\[Proxy Service \d+\] Failed to execute operation|Proxy Call to rank \d+ failed|proxyProgress.*failed|\[Proxy Progress\])",
       "NCCL 2.12-2.32 proxy.cc ('[Proxy Service %d] Failed to execute operation' since 2.12, "
       "'[Service thread] Error encountered progressing' since 2.17)",
       MessagePhase::kRuntime, CatalogueCause::kPeerLost, false,
       "had its proxy thread fail an operation with a peer (usually a peer that went away)",
       nullptr, Area::kProxy},
      {"nccl.socket.truncated", R"(NET/Socket ?: ?(?:peer \S+ )?message truncated)",
       "NCCL 2.12-2.30 transport/net_socket.cc", MessagePhase::kRuntime,
       CatalogueCause::kSizeMismatch, false,
       "received more bytes from a peer than the operation expected: the two ranks disagree on "
       "the operation's size",
       R"(peer (\S+) message truncated)", Area::kNetSocket},
      {"nccl.ras.dead_peer", R"(RAS declaring peer \S+ as DEAD)",
       "NCCL 2.24-2.30 ras/peers.cc (INFO, NCCL_DEBUG_SUBSYS including RAS)",
       MessagePhase::kRuntime, CatalogueCause::kPeerLost, false,
       "was told by NCCL's RAS that a peer stopped answering (declared dead)",
       R"(peer (\S+) as DEAD)", Area::kRas},
      // --- loaders and libraries
      {"loader.nccl_symbol",
       R"(undefined symbol: nccl\w+|version `?NCCL_[\d.]+'? not found|libnccl\.so[.\d]*: cannot open shared object file|Failed to load NCCL library)",
       "the dynamic loader (glibc), torch/__init__.py import, vLLM pynccl_wrapper.py",
       MessagePhase::kInit, CatalogueCause::kLibrary, false,
       "loaded an NCCL library that does not fit the framework (a missing symbol or version)",
       nullptr},
      {"loader.missing_library",
       R"(error while loading shared libraries: ([^:\s]+): cannot open shared object file|(lib[\w.+-]+\.so[.\d]*): cannot open shared object file)",
       "the dynamic loader (glibc dl-load: 'error while loading shared libraries: %s: cannot "
       "open shared object file'), Python's ImportError and ctypes' OSError quoting it",
       MessagePhase::kInit, CatalogueCause::kLoader, false,
       "could not start: the dynamic loader found no such library", nullptr},
      {"loader.symbol_version", R"(version `?(?:GLIBCXX|GLIBC|CXXABI)_[\d.]+'? not found)",
       "the dynamic loader (glibc dl-version: \"version `%s' not found (required by %s)\")",
       MessagePhase::kInit, CatalogueCause::kLoader, false,
       "could not start: a module needs a newer C or C++ runtime than the one loaded", nullptr},
      {"loader.undefined_symbol", R"(symbol lookup error: .*undefined symbol: \w+)",
       "the dynamic loader (glibc dl-lookup: 'symbol lookup error: %s: undefined symbol: %s')",
       MessagePhase::kInit, CatalogueCause::kLoader, false,
       "could not start: a module needs a symbol no loaded library has", nullptr},
      // --- no driver, no GPU (the CUDA runtime's and nvidia-smi's words)
      {"torch.no_driver", R"(Found no NVIDIA driver on your system)",
       "PyTorch 1.x-2.15 torch/cuda/__init__.py (_lazy_init, no libcuda)", MessagePhase::kInit,
       CatalogueCause::kDriver, false, "found no CUDA driver", nullptr, Area::kCuda},
      {"torch.no_gpus",
       R"(ProcessGroupNCCL is only supported with GPUs, no GPUs found|nccl2? requires at least one CUDA device)",
       "PyTorch 2.x torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (its constructor)",
       MessagePhase::kInit, CatalogueCause::kDriver, false,
       "found no GPU for the NCCL process group (none visible to the process)", nullptr,
       Area::kC10d},
      {"nvidia_smi.no_driver",
       R"(NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver|^No devices were found\s*$)",
       "nvidia-smi (driver 450-580)", MessagePhase::kInit, CatalogueCause::kDriver, false,
       "has no GPU driver or no GPU in reach (nvidia-smi)", nullptr, Area::kCuda},
      // --- DeepSpeed, Megatron-core and SGLang (read with
      // scripts/list-python-messages.py in their PyPI releases; quoted in
      // tests/data/logs/quoted/{deepspeed,megatron,sglang}_*.log). Where they
      // only pass on PyTorch's or NCCL's words, those messages name the cause.
      {"deepspeed.launcher.killed", R"(exits with return code = -\d+)",
       "DeepSpeed 0.14-0.19 deepspeed/launcher/launch.py (sigkill_handler: '{cmd} exits with "
       "return code = {code}', the command of the last rank it started, not of the one that died)",
       MessagePhase::kRuntime, CatalogueCause::kProcessKilled, false,
       "reported, as the DeepSpeed launcher of a node, that a process it started there was killed "
       "by a signal (a negative return code is the signal), and stopped the others",
       nullptr, Area::kDeepspeedLauncher},
      {"deepspeed.comm.not_initialized",
       R"(DeepSpeed backend not set, please initialize it|)"
       R"(Distributed backend is not initialized\. Please set dist_init_required|)"
       R"(MPI (?:rank|world size) \d+ does not match torch)",
       "DeepSpeed 0.14-0.19 deepspeed/comm/comm.py (the asserts of every collective and of "
       "init_distributed, mpi_discovery)",
       MessagePhase::kInit, CatalogueCause::kDeepspeedInit, false,
       "used DeepSpeed's communication before it was initialised, or with a rank or world size "
       "that MPI and torch.distributed disagree on",
       nullptr, Area::kDeepspeedComm},
      {"model_parallel.world_size",
       R"(world_size \(\d+\) is not (?:divisible by|equal to tensor_model_parallel_size))",
       "Megatron-core 0.10-0.16 megatron/core/parallel_state.py (initialize_model_parallel: "
       "'world_size ({}) is not divisible by {}'), SGLang 0.4-0.5 "
       "sglang/srt/distributed/parallel_state.py ('world_size ({}) is not equal to "
       "tensor_model_parallel_size ({}) x pipeline_model_parallel_size ({})')",
       MessagePhase::kInit, CatalogueCause::kModelParallel, false,
       "was started with a number of processes that the model-parallel sizes do not fit", nullptr,
       Area::kModelParallel},
      {"model_parallel.group_state",
       R"(\b(?:model|data|pipeline|context|expert|embedding|tensor)[\w +-]*? group(?:-gloo)? )"
       R"((?:is )?(?:not|already) initialized)",
       "Megatron-core 0.10-0.16 megatron/core/parallel_state.py, SGLang 0.4-0.5 "
       "sglang/srt/distributed/parallel_state.py (the asserts of initialize_model_parallel and of "
       "each get_*_group)",
       MessagePhase::kInit, CatalogueCause::kModelParallel, false,
       "asked for a model-parallel group before the groups were set up, or set them up twice",
       nullptr, Area::kModelParallel},
      {"sglang.memory_unbalanced",
       R"(The memory capacity is unbalanced\. Some GPUs may be occupied by other processes)",
       "SGLang 0.4-0.5 sglang/srt/model_executor/model_runner.py (init_torch_distributed: the "
       "tensor-parallel ranks' free GPU memory compared)",
       MessagePhase::kInit, CatalogueCause::kGpuBusy, false,
       "found less free memory on another GPU of its tensor-parallel group than on its own "
       "(another process holds memory there)",
       nullptr, Area::kSglang},
      // --- JAX/XLA's distributed runtime (the coordination service of
      // xla/tsl/distributed_runtime/coordination/ and xla/pjrt/distributed/)
      {"jax.coordination.heartbeat",
       R"(heartbeat timeout\. This indicates that the remote task has failed|)"
       R"(tasks are unhealthy \(stopped sending heartbeats\)|)"
       R"(coordinator detected missing heartbeats|)"
       R"(Terminating process because of missing heartbeat)",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc "
       "(CheckHeartbeatTimeout), xla/pjrt/distributed/client.h (before 2023: 'the coordinator "
       "detected missing heartbeats')",
       MessagePhase::kRuntime, CatalogueCause::kJaxTaskLost, false,
       "was told by JAX's coordination service that a task stopped sending heartbeats (it "
       "died)",
       R"((/job:[^/\s]+/replica:\d+/task:\d+))", Area::kJaxCoordination},
      {"jax.coordination.restarted",
       R"(Heartbeat: Incarnation ID mismatch|tried to connect with a different incarnation)",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc (RecordHeartbeat, "
       "RegisterTaskAsync)",
       MessagePhase::kRuntime, CatalogueCause::kJaxTaskLost, false,
       "was told by JAX's coordination service that a task restarted (it had crashed)",
       R"((/job:[^/\s]+/replica:\d+/task:\d+))", Area::kJaxCoordination},
      {"jax.coordination.leader",
       R"(Coordination service has stopped\.|Leader incarnation ID mismatch|)"
       R"(Barrier failed because service is shutting down|Shutdown barrier has failed)",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc, "
       "coordination_service_agent.cc (StartSendingHeartbeats)",
       MessagePhase::kRuntime, CatalogueCause::kJaxLeaderLost, false,
       "lost JAX's coordination service (process 0, its leader, stopped or restarted)", nullptr,
       Area::kJaxCoordination},
      {"jax.coordination.register_barrier", R"(Barrier timed out\. Id: \[Init\])",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc "
       "(CheckBarrierTimeout "
       "on [Init]Wait_for_all_tasks_to_register)",
       MessagePhase::kInit, CatalogueCause::kJaxRendezvous, false,
       "timed out waiting for every JAX task to register with the coordination service (some "
       "never connected)",
       nullptr, Area::kJaxCoordination},
      {"jax.coordination.unexpected_task", R"(Unexpected task registered with task_name=)",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc "
       "(RegisterTaskAsync)",
       MessagePhase::kInit, CatalogueCause::kJaxRendezvous, false,
       "registered with JAX's coordination service as a task it does not expect (num_processes "
       "or "
       "process_id disagree)",
       R"(task_name=(\S+))", Area::kJaxCoordination},
      {"jax.coordination.barrier",
       R"(Barrier timed out\. Id: |GetKeyValue\(\) timed out with key: )",
       "XLA xla/tsl/distributed_runtime/coordination/coordination_service.cc "
       "(CheckBarrierTimeout), "
       "coordination_service_agent.cc (GetKeyValue)",
       MessagePhase::kRuntime, CatalogueCause::kJaxBarrier, false,
       "timed out at a JAX barrier (or waiting for a key) that other tasks never reached",
       R"((?:Id|key): ([^\s.,]+))", Area::kJaxCoordination},
      {"jax.coordination.polled_error",
       R"(Terminating process because the JAX distributed service detected fatal errors|)"
       R"(Polled an error from coordination service)",
       "XLA xla/pjrt/distributed/client.h (missed_heartbeat_callback), "
       "xla/tsl/distributed_runtime/coordination/coordination_service_agent.cc "
       "(StartPollingForError)",
       MessagePhase::kRuntime, CatalogueCause::kJaxTaskLost, false,
       "was stopped by JAX because the coordination service reported an error (usually another "
       "task died)",
       nullptr, Area::kJaxCoordination},
      // --- PyTorch c10d rendezvous (TCPStore)
      {"torch.store.client_timeout", R"(The client socket has timed out after)",
       "PyTorch 2.2+ torch/csrc/distributed/c10d/socket.cpp", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false,
       "timed out connecting to the rendezvous store (TCPStore) as a client: nothing answered "
       "at "
       "that address",
       R"(connect to \(([^,()]+), (\d+)\))", Area::kC10dStore},
      {"torch.store.client_failed", R"(The client socket has failed to connect to)",
       "PyTorch 2.0+ torch/csrc/distributed/c10d/socket.cpp", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false,
       "could not connect to the rendezvous store (TCPStore) as a client (the errno says why: "
       "refused "
       "when nothing listens there yet or at a wrong MASTER_ADDR/MASTER_PORT, unreachable or "
       "timed "
       "out when the address is not reachable from this node)",
       R"(connect to \[?([^\]\s]+?)\]?:(\d+))", Area::kC10dStore},
      {"torch.store.server_bind",
       R"(The server socket has failed to (?:listen|bind)|server socket.*(?:EADDRINUSE|[Aa]ddress already in use))",
       "PyTorch 2.0+ torch/csrc/distributed/c10d/socket.cpp", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false,
       "could not open the rendezvous store (TCPStore) as its server: the port is taken "
       "(another "
       "job, or a previous run still holding it)",
       R"(bind to \[?([^\]\s]+?)\]?:(\d+))", Area::kC10dStore},
      {"torch.store.clients_missing", R"(waiting for clients\. \d+/\d+ clients joined)",
       "PyTorch 2.0+ torch/csrc/distributed/c10d/TCPStore.cpp", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false,
       "as the rendezvous store's server, waited for every rank and fewer joined: ranks that "
       "never "
       "started, a WORLD_SIZE larger than the ranks launched, or ranks pointed at another "
       "MASTER_ADDR/PORT",
       nullptr, Area::kC10dStore},
      {"torch.store.barrier", R"(Timed out initializing process group in store based barrier)",
       "PyTorch 1.8-2.x torch/distributed/distributed_c10d.py", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false,
       "timed out waiting for all ranks at init_process_group's barrier (the ranks disagree on "
       "the world size, or some never arrived)",
       nullptr, Area::kC10dStore},
      {"torch.store.connect_timeout", R"(connect\(\) timed out\. Original timeout was)",
       "PyTorch 1.x torch/lib/c10d/TCPStore.cpp", MessagePhase::kInit, CatalogueCause::kRendezvous,
       false, "timed out connecting to the rendezvous store (TCPStore)", nullptr, Area::kC10dStore},
      {"torch.elastic.rendezvous",
       R"(RendezvousTimeoutError|RendezvousConnectionError|RendezvousClosedError|The connection to the C10d store has failed|EtcdRendezvous\w*Error|[Ee]tcd.*(?:failed|timed out|[Ee]rror))",
       "PyTorch 1.9+ torch/distributed/elastic/rendezvous/", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false, "failed torchrun's rendezvous (c10d or etcd backend)",
       nullptr, Area::kTorchrun},
      {"torch.store.error", R"(DistNetworkError|DistStoreError)",
       "PyTorch 2.1+ torch/distributed (the store's exception types)", MessagePhase::kInit,
       CatalogueCause::kRendezvous, false, "failed talking to the rendezvous store (TCPStore)",
       nullptr, Area::kC10dStore},
      // --- PyTorch DDP and the collectives it checks
      {"torch.ddp.unused_parameters",
       R"(Expected to have finished reduction in the prior iteration)",
       "PyTorch 1.1+ torch/csrc/distributed/c10d/reducer.cpp", MessagePhase::kRuntime,
       CatalogueCause::kDdpUnused, false,
       "started an iteration before DDP had reduced every gradient of the last one: some "
       "parameters took no part in the loss",
       nullptr, Area::kDdp},
      {"torch.ddp.ready_twice", R"(Expected to mark a variable ready only once)",
       "PyTorch 1.1+ torch/csrc/distributed/c10d/reducer.cpp", MessagePhase::kRuntime,
       CatalogueCause::kDdpReadyTwice, false,
       "had DDP mark a parameter's gradient ready twice in one backward pass", nullptr, Area::kDdp},
      {"torch.ddp.model_mismatch",
       R"(DDP expects same model across all ranks|appears not to match (?:the )?(?:number|sizes|strides) of (?:the )?(?:model )?param)",
       "PyTorch 1.9+ torch/csrc/distributed/c10d/comm.cpp, reducer.cpp "
       "(verify_params_across_processes)",
       MessagePhase::kInit, CatalogueCause::kDdpModel, false,
       "failed DDP's check that every rank holds the same parameters: a different model on "
       "some "
       "rank, or, when the other rank 'has inconsistent 0 params', that rank never took part "
       "(it "
       "was stuck, or the collective that carries the check failed)",
       nullptr, Area::kDdp},
      {"torch.debug.mismatch", R"(Detected mismatch between collectives on ranks)",
       "PyTorch 1.10+ torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp "
       "(TORCH_DISTRIBUTED_DEBUG=DETAIL)",
       MessagePhase::kRuntime, CatalogueCause::kTorchMismatch, false,
       "ran a different collective than another rank at the same point (PyTorch's own check)",
       nullptr, Area::kC10d},
      {"torch.join.exhausted", R"(Rank \d+ exhausted all inputs)",
       "PyTorch 1.10+ torch/distributed/algorithms/join.py (Join with "
       "throw_on_early_termination)",
       MessagePhase::kRuntime, CatalogueCause::kUneven, false,
       "ran out of inputs before the other ranks (uneven inputs): it left the training loop "
       "early",
       nullptr, Area::kDdp},
      {"torch.join.uneven", R"(Detected at least one rank that exhausted inputs)",
       "PyTorch 1.8+ torch/nn/parallel/distributed.py (join)", MessagePhase::kRuntime,
       CatalogueCause::kUneven, false, "ran out of inputs before the other ranks (uneven inputs)",
       nullptr, Area::kDdp},
      // --- PyTorch ProcessGroupNCCL: teardown, watchdog
      {"torch.teardown.destroy",
       R"(in destroy_process_group|\bdestroy_process_group \(\S*distributed_c10d\.py|destroy_process_group.*(?:hang|stuck|timed out)|ProcessGroupNCCL::shutdown|ProcessGroupNCCL::~ProcessGroupNCCL|abortCommsFromMap)",
       "PyTorch torch/distributed/distributed_c10d.py, ProcessGroupNCCL.cpp (teardown frames)",
       MessagePhase::kRuntime, CatalogueCause::kTeardown, false,
       "was still tearing its process group down (destroy_process_group) when it stopped", nullptr,
       Area::kC10d},
      {"torch.teardown.not_destroyed",
       R"(NCCL communicator hasn't been destroyed|process group has NOT been destroyed before we destruct ProcessGroupNCCL)",
       "PyTorch 2.4+ torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (its destructor, at exit)",
       MessagePhase::kRuntime, CatalogueCause::kTeardownRisk, false,
       "exited without destroying its process group (destroy_process_group)", nullptr, Area::kC10d},
      {"torch.watchdog.stuck",
       R"(watchdog got stuck for \d+ seconds|Heartbeat monitor timed out|ProcessGroupNCCL watchdog hang)",
       "PyTorch 2.2+ torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (heartbeat monitor)",
       MessagePhase::kRuntime, CatalogueCause::kWatchdog, false,
       "had PyTorch's NCCL watchdog thread itself hang (blocked in an NCCL or CUDA call)", nullptr,
       Area::kC10d},
      {"torch.watchdog.timeout",
       R"(Watchdog caught collective operation timeout|ran for \d+ milliseconds before timing out|Some NCCL operations have failed or timed out|WorkNCCL::checkTimeout|ProcessGroupNCCL::watchdogHandler|ncclCommWatchdog)",
       "PyTorch 1.9+ torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp", MessagePhase::kRuntime,
       CatalogueCause::kWatchdog, false, "timed out in a collective (PyTorch's NCCL watchdog)",
       nullptr, Area::kC10d},
      // --- the GPU, its memory and the host's, kernels
      {"host.oom_killer",
       R"((?:Out of memory|Memory cgroup out of memory): Killed process \d+|oom-kill|oom_reaper)",
       "the Linux kernel's OOM killer (mm/oom_kill.c), in dmesg", MessagePhase::kAny,
       CatalogueCause::kHostOom, false, "was killed by the kernel's out-of-memory killer", nullptr,
       Area::kHost},
      {"nvidia_smi.gpu_lost", R"(GPU is lost\.? +Reboot the system|: GPU is lost\b)",
       "nvidia-smi ('Unable to determine the device handle for GPU %s: GPU is lost.  Reboot the "
       "system to recover this GPU')",
       MessagePhase::kAny, CatalogueCause::kGpuFailed, false,
       "lost its GPU: the driver can no longer reach it", nullptr, Area::kGpu},
      {"kernel.aer_uncorrected", R"(AER: Uncorrect(?:ed|able) \((?:Fatal|Non-Fatal)\) error)",
       "the Linux kernel's PCIe AER driver (drivers/pci/pcie/aer.c: 'AER: Uncorrected (%s) error "
       "received: %s'), in dmesg",
       MessagePhase::kAny, CatalogueCause::kGpuFailed, false,
       "saw an uncorrected PCIe error (the link to a GPU or NIC)", nullptr, Area::kPcie},
      {"gpu.failed",
       R"(uncorrectable ECC error encountered|GPU has fallen off the bus|is/are busy or unavailable|ECC error)",
       "the CUDA runtime's error strings (cudaErrorECCUncorrectable, "
       "cudaErrorDevicesUnavailable), "
       "the driver's dmesg",
       MessagePhase::kAny, CatalogueCause::kGpuFailed, false, "lost its GPU to a hardware failure",
       nullptr, Area::kGpu},
      {"gpu.out_of_memory", R"(out of memory|OutOfMemoryError|Failed to CUDA calloc)",
       "the CUDA runtime (cudaErrorMemoryAllocation), PyTorch's torch.cuda.OutOfMemoryError, "
       "NCCL "
       "2.4-2.32 alloc.h ('Failed to CUDA calloc')",
       MessagePhase::kAny, CatalogueCause::kGpuOom, false, "ran out of GPU memory", nullptr,
       Area::kCuda},
      {"cuda.kernel_fault",
       R"(illegal memory access|unspecified launch failure|misaligned address|device-side assert)",
       "the CUDA runtime's error strings for a faulting kernel (cudaErrorIllegalAddress, "
       "cudaErrorLaunchFailure, cudaErrorMisalignedAddress, cudaErrorAssert)",
       MessagePhase::kAny, CatalogueCause::kKernel, false, "hit a CUDA error in a kernel", nullptr,
       Area::kCuda},
      // --- CUDA errors under a framework
      {"cuda.error", R"(CUDA error[: ]|[Cc]uda failure|CUDA failure|cudaError\w+|CUDA_ERROR_\w+)",
       "the CUDA runtime through PyTorch (c10/cuda/CUDAException.cpp), NCCL's CUDACHECK",
       MessagePhase::kAny, CatalogueCause::kCuda, false, "hit a CUDA error", nullptr},
      // --- NCCL's other WARN messages, 2.4-2.32 (tests/data/nccl_warns.tsv, made by
      // scripts/extract-nccl-warns.py from NCCL's history and, for 2.31.2-2.32.6,
      // its libraries): by subsystem, from the words each prints. Specific
      // first; NCCL-only (nccl_only): many of the words would mean something
      // else in a program's own output.
      {"nccl.proxy.request_size",
       R"(Invalid (?:NET|P2P IPC|CollNet|UDS proxy) (?:(?:de)?register )?(?:request|response) size)",
       "NCCL 2.31-2.32 transport/net.cc, p2p.cc, coll_net.cc, proxy.cc (a request to the proxy "
       "thread checked)",
       MessagePhase::kAny, CatalogueCause::kInternal, false,
       "had a request between a rank and its proxy thread arrive with a size it does not expect "
       "(NCCL's own check of its proxy protocol)",
       nullptr, Area::kProxy, true},
      {"nccl.ras.diagnostics", R"(RAS (?:\w+ )?diagnostics|progress counter monitor)",
       "NCCL 2.31-2.32 ras/diagnostics*.cc, ras/collectives.cc (RAS's ECC, NVLink, driver and "
       "environment checks across ranks), 2.32 ras/progress_monitor.cc",
       MessagePhase::kAny, CatalogueCause::kInternal, false,
       "had NCCL's RAS diagnostics (its checks of ECC, NVLink, drivers and settings across ranks, "
       "and its progress monitor) fail one of their own checks",
       nullptr, Area::kRas, true},
      {"nccl.rma.socket_closed",
       R"(RMA/Socket ?: .*(?:socket (?:from|to) peer=\d+ closed|closed before|from closed peer))",
       "NCCL 2.32 the one-sided RMA transport over sockets (rma/, 'RMA/Socket : ...')",
       MessagePhase::kRuntime, CatalogueCause::kPeerLost, false,
       "lost the socket to a peer of its one-sided (RMA) transfers: the process there died, or the "
       "network failed",
       nullptr, Area::kRma, true},
      {"nccl.bootstrap.async_send",
       R"(asynchronous (?:bootstrap )?send|bootstrap state is closing)",
       "NCCL 2.32 bootstrap.cc (bootstrapSend, bootstrapRecv, bootstrapClose: sends to peers that "
       "complete in the background)",
       MessagePhase::kAny, CatalogueCause::kBootstrap, false,
       "had a message to another rank over NCCL's bootstrap network fail (sent in the background, "
       "reported at the next send or receive)",
       nullptr, Area::kBootstrap, true},
      {"nccl.socket.encryption",
       R"(\bTLS\b|ncclCrypt|ncclSetEncryption|encryption mode|pre-shared key|config->psk)",
       "NCCL 2.32 misc/crypt.cc (the encryption of NCCL's sockets)", MessagePhase::kAny,
       CatalogueCause::kConfig, false,
       "could not set NCCL's sockets up with the encryption it was configured for (TLS, a "
       "pre-shared key), which this build or the setting does not allow",
       nullptr, Area::kNetSocket, true},
      {"nccl.enqueue.collective_mismatch",
       R"(Mismatched collective detected|may be caused by a collective mismatch|)"
       R"(symmetric registration check failed)",
       "NCCL 2.23-2.32 init.cc (the hang check), misc/argcheck.cc", MessagePhase::kRuntime,
       CatalogueCause::kSizeMismatch, false,
       "was told by NCCL that the ranks' collectives do not match (NCCL's own check)", nullptr,
       Area::kEnqueue, true},
      {"nccl.usage.launch_race", R"(host threads racing to launch NCCL on same device)",
       "NCCL 2.26-2.32 misc/strongstream.cc (launchRaceFatalMsg, printed as WARN(\"%s\"))",
       MessagePhase::kAny, CatalogueCause::kUsage, false,
       "had two of its host threads launch NCCL work on one device at the same time", nullptr,
       Area::kEnqueue},
      {"nccl.library.too_old",
       R"(NCCL library (?:version )?is too old|not backwards compatible|)"
       R"(compiled with too old version of NCCL)",
       "NCCL 2.28-2.32 dev_runtime.cc, devcomm/ (the device API's version check)",
       MessagePhase::kInit, CatalogueCause::kVersion, false,
       "runs an NCCL library of another version than the one the program was compiled with",
       nullptr, Area::kInit, true},
      {"nccl.cuda.driver_old",
       R"(Failed to load CUDA missing symbol|PFN functions not found|)"
       R"(Retrieve \S+ (?:version \d+ )?failed with|cuDriverGetVersion failed|)"
       R"(older than the minimum version|requires CUDA driver|not supported prior to CUDA|)"
       R"(does not support this CUDA version|due to old driver|CUDA runtime >= 11\.3|)"
       R"(require CUDA \d+\.\d+ or newer)",
       "NCCL 2.9-2.32 misc/cudawrap.cc, misc/strongstream.cc, enqueue.cc, include/alloc.h",
       MessagePhase::kAny, CatalogueCause::kDriverOld, false,
       "found a CUDA driver too old for this NCCL (a driver entry point or feature missing)",
       nullptr, Area::kCuda, true},
      {"nccl.cuda.device",
       R"(Failed to (?:create|set) CUDA (?:context|device)|CUDA device \d+ >= MAX|)"
       R"(Unknown device error|Invalid device \d+ \(totalnDev|cudaFree \S+ failed|)"
       R"(sync (?:device|host)Stream error|maxSharedMem)",
       "NCCL 2.9-2.32 proxy.cc, bootstrap.cc, init.cc, transport/net.cc", MessagePhase::kAny,
       CatalogueCause::kCuda, false,
       "could not use its CUDA device (context, device selection or a stream)", nullptr,
       Area::kCuda, true},
      {"nccl.alloc.gpu",
       R"(Failed to CUDA (?:host )?(?:malloc|calloc|alloc)|cuMem\w+ failed|)"
       R"([Mm]emory allocation failed)",
       "NCCL 2.4-2.32 include/alloc.h", MessagePhase::kAny, CatalogueCause::kGpuOom, false,
       "could not allocate GPU (or pinned host) memory for its buffers", nullptr, Area::kAlloc,
       true},
      {"nccl.gpu.shared", R"(Multiple ranks detected using the same GPU|ncclCheckMultiRank)",
       "NCCL 2.30.3-2.30.4 graph/topo.cc", MessagePhase::kInit, CatalogueCause::kGpu, false,
       "shares a GPU with another rank of the same communicator", nullptr, Area::kInit, true},
      {"nccl.fabric.mnnvl",
       R"(MNNVL|[Mm]ultimem|Multicast support|[Mm]ulticast memory|NVswitch links mismatch|)"
       R"(FABRIC handle|\(FABRIC\))",
       "NCCL 2.19-2.32 init.cc, mnnvl.cc, transport/p2p.cc, dev_runtime.cc, mem_manager.cc",
       MessagePhase::kAny, CatalogueCause::kFabric, false,
       "could not use the multi-node NVLink fabric (MNNVL, multicast)", nullptr, Area::kNvls, true},
      {"nccl.p2p.disabled",
       R"(P2P is disabled between|IPC register userbuff|invalid IPC peer|Legacy IPC|IPC: |)"
       R"(P2P computation|Diagnostics P2P|P2P IPC|IPC registration)",
       "NCCL 2.4-2.32 graph/paths.cc, transport/p2p.cc, os/windows_ipcsocket.cc",
       MessagePhase::kAny, CatalogueCause::kP2p, false, "could not use P2P between local GPUs",
       nullptr, Area::kP2p, true},
      {"nccl.gdr",
       R"(GDRCOPY|GDRCopy|\bgdr_\w+|DMA-BUF (?:fd|mapping|mmap)|GDR (?:Flush|flag)|)"
       R"(NCCL_GDRCOPY|Peermem)",
       "NCCL 2.12-2.32 misc/gdrwrap.cc, transport/net.cc", MessagePhase::kAny, CatalogueCause::kGdr,
       false, "could not use GPUDirect RDMA or GDRCopy", nullptr, Area::kGdr, true},
      {"nccl.nvml", R"(\bnvml\w*\(|NVML|libnvidia-ml|nvml\.dll)",
       "NCCL 2.5-2.32 misc/nvmlwrap.cc, graph/xml.cc", MessagePhase::kAny, CatalogueCause::kNvml,
       false, "could not query the GPUs through NVML", nullptr, Area::kNvml, true},
      {"nccl.collnet", R"(CollNet|COLLNET|[Cc]ollnet|SHARP|sharp resources)",
       "NCCL 2.6-2.32 transport/coll_net.cc, init.cc, enqueue.cc, graph/tuning.cc",
       MessagePhase::kAny, CatalogueCause::kCollnet, false,
       "could not use CollNet (in-network reductions)", nullptr, Area::kCollnet, true},
      {"nccl.ib.more",
       R"(NET/MLX5|libibverbs|\bibv_\w+|\bIBV_|Listencomm|plane IDs?\b|plane ID that|\bFLID\b|)"
       R"(sendComm|qp depth|\bGDAKI\b|DOCA failure|dlvsym failed|ordering_semantic|doca_\w+)",
       "NCCL 2.4-2.32 misc/ibvwrap.cc, misc/mlx5dvwrap.cc, transport/net_ib/", MessagePhase::kAny,
       CatalogueCause::kIb, false, "hit an InfiniBand verbs failure", nullptr, Area::kNetIb, true},
      {"nccl.ib.fatal", R"(communicator encountered a fatal error \(detected in)",
       "NCCL 2.23-2.32 transport/net_ib/common.cc (after a fatal async event)",
       MessagePhase::kRuntime, CatalogueCause::kNetRuntime, false,
       "had its InfiniBand communicator fail (a fatal event on the device)", nullptr, Area::kNetIb,
       true},
      {"nccl.library.load",
       R"(Failed to open \S+|[Dd]lsym failed on|lib wrapper not initialized|)"
       R"(Failed to load \S+\.(?:so|dll))",
       "NCCL 2.4-2.32 misc/gdrwrap.cc, misc/ibvwrap.cc, misc/mlx5dvwrap.cc, os/windows.cc",
       MessagePhase::kAny, CatalogueCause::kPlugin, false,
       "could not load an optional library it uses (libibverbs, libgdrapi, libnvidia-ml, a "
       "plugin) or one of its symbols",
       nullptr, Area::kPlugin, true},
      {"nccl.plugin",
       R"([Pp]lugin|netPlugin|ginPlugin|rmaPlugin|[Tt]uner|[Pp]rofiler|)"
       R"(Network returned 0 device|device code index|maxP2pBytes|maxCollBytes|netName)",
       "NCCL 2.4-2.32 plugin/, misc/tuner.cc, transport/net.cc", MessagePhase::kAny,
       CatalogueCause::kPlugin, false, "had a network, tuner or profiler plugin fail", nullptr,
       Area::kPlugin, true},
      {"nccl.device_api",
       R"(\bGIN\b|GIN_|GIN-|[Ee]lastic GIN|\bRMA\b|RMA-|[Oo]ne[- ]sided|ncclPutSignal|)"
       R"(ncclSignal|ncclWaitSignal|ncclRma|[Ss]ymmetric|[Dd]ev(?:ice)? ?comm|\bLSA\b|lsaRank|)"
       R"(MemManager|Memory (?:suspend|resume)|MCBasePtr|[Ww]indow (?:registration|address|)"
       R"(has)|window 0x|peerWin|srcWin|CE collective|ncclDevr|physical segments|)"
       R"(CU_MEM_LOCATION|[Gg]in (?:type|connect)|GFD test|Rma connect|DOCA Error|)"
       R"(Not enough space to get elements|\bCFT\b|[Cc]ft[A-Z]|(?:MC|UC) team|[Ss]egment count|)"
       R"(ncclSymk|ncclGenk|\bCOUNTED\b|DevComm|ginCustomArray|RMA_\w+|)"
       R"(kernel \S+ for \S+ with red op)",
       "NCCL 2.27-2.32 dev_runtime*.cc, gin/, rma/, mem_manager.cc, enqueue.cc, "
       "scheduler/symmetric_sched.cc",
       MessagePhase::kAny, CatalogueCause::kDeviceApi, false,
       "could not set up NCCL's device-side communication (GIN, RMA, symmetric windows)", nullptr,
       Area::kDeviceApi, true},
      {"nccl.usage",
       R"([Ii]nvali[dg] (?:arguments?|handle|rank|root|type|reduction|device count|config|)"
       R"(NCCL_COMM_BLOCKING|pointer|intra-node)|invalid device count|argument is NULL|)"
       R"(is not a valid pointer|mismatchs with NCCL device|unknown to this communicator|)"
       R"(improper usage|should not be called|not in a group call|)"
       R"(not allowed in the same group|Illegal to have|none or all communicators|)"
       R"(mixing different streams|must either be all uncaptured|)"
       R"(being captured by the expected graph|graph id=|communicator was revoked|)"
       R"(has already been destroyed|before the previous operation returned|must be 0\)|)"
       R"(ncclCommGrow|ncclRedOpDestroy|ncclRedOp_t|[Ff]lags \d+ is invalid|)"
       R"(without a matching (?:send|recv)|not within valid range|corrupted comm object|)"
       R"(FP8 reduction|_INITIALIZER|Split shares resources|pass NULL|)"
       R"(handles and parent are NULL|parent comm and handle|register fails, buffer|)"
       R"(does not satisfy|nranks=\d+|register user buffers|exceeds ndev|)"
       R"(ncclCollConfig_t (?:magic|size)|launch-completion event|excludeRanksList)",
       "NCCL 2.4-2.32 misc/argcheck.cc, init.cc, enqueue.cc, group.cc, bootstrap.cc",
       MessagePhase::kAny, CatalogueCause::kUsage, false,
       "was called wrongly by the program (NCCL's argument or state check)", nullptr, Area::kUsage,
       true},
      // Settings NCCL says it ignores, going on with its default or a
      // fallback: the job can be healthy (WarningOnly).
      {"nccl.setting_ignored",
       R"(is being ignored because it is not a power of 2|)"
       R"(NCCL_NET_MERGE_POLICY: unknown value '.*', defaulting to|)"
       R"(Ignoring SHM locality, must be 1|Duplicate registration for key .*, ignoring|)"
       R"(Cannot re-import peer buffer .* - skipping|)"
       R"(NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to|)"
       R"(total number of sockets is greater than the maximum allowed, setting|)"
       R"(Both NCCL_CTA_POLICY_ZERO and NCCL_CTA_POLICY_EFFICIENCY are set|)"
       R"(falling back to graphStreamOrdering=1)",
       "NCCL 2.13-2.32 init.cc ('NCCL_WORK_FIFO_BYTES=%d is being ignored because it is not a "
       "power of 2.'), graph/topo.cc (NCCL_NET_MERGE_POLICY), transport/shm.cc (SHM locality), "
       "param/param_registry.cc, mem_manager.cc (a peer buffer not re-imported), 2.4-2.32 "
       "transport/net_socket.cc (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD above their "
       "maximum), 2.29-2.32 init.cc (CTA policies ZERO and EFFICIENCY together), 2.30-2.32 "
       "init.cc (graphStreamOrdering=0 with graph mixing)",
       MessagePhase::kAny, CatalogueCause::kSettingIgnored, false,
       "ignored a setting it was given and went on without it", nullptr, Area::kConfig, true},
      {"nccl.config",
       R"(NCCL_[A-Z0-9_]+|[Nn]o algorithm/protocol|no symmetric kernel available|)"
       R"(Invalid \S+ \d+ \((?:maximum|minimum|must be)|User asked for a (?:maximum|minimum)|)"
       R"([Cc]hannels upper limit|min(?:CTAs|CTAs)|maxCTAs|CTAPolicy|cost_model|)"
       R"(Unrecognized (?:element|prefix) token|must have a prefix|PARAM: Duplicate|)"
       R"(Duplicate registration for key|SHM locality|splitShare \d+ is not|)"
       R"(graphStreamOrdering|[Vv]alue \d+ is too big|Net registration invalid algorithm|CC On|)"
       R"(algSelection|forceAlgSelection|Empty entry when parsing)",
       "NCCL 2.4-2.32 init.cc, enqueue.cc, graph/tuning.cc, graph/connect.cc, misc/rings.cc, "
       "tuning/, param/",
       MessagePhase::kAny, CatalogueCause::kConfig, false,
       "could not use a setting it was given (an NCCL_* variable or a communicator config)",
       nullptr, Area::kConfig, true},
      {"nccl.topology",
       R"(\bXML\b|[Tt]opology|TOPO|[Tt]opo[A-Z ]|ncclTopo|KV Convert|Attribute \S+ of node|)"
       R"(numa ID|CPU architecture|nvlink detection|trying to use CUDA instead|)"
       R"([Cc]ould not find (?:GPU|gpu|NET|net|node|id|local|intermediate|rev link|a path|)"
       R"(any local path|CPU|real path)|Couldn't find net|[Nn]o path computed|reverse path|)"
       R"(ring \d+ does not|does not loop back|tree already has|Add (?:NVLink|PCI Link|)"
       R"(C2c) error|[Bb]usId|PCI bus ID|MLOPart|hostHash|netMasks|NUMA|CPU affinity|)"
       R"(sched_[gs]etaffinity|AffinityMask|requires NIC|NET devices|fused NIC|NICs|)"
       R"(merging multiple devices|netDevs|network devices|too many (?:DEV )?nodes|)"
       R"(nodes of type|[Ii]ntra ?(?:node|proc)? ranks|local ranks rank|nLocals|)"
       R"([Rr]ings?\b.*(?:start/end|falling back|limiting)|Could not create rings|)"
       R"(transport to connect next group|NRINGS|mixed local (?:Net|CollNet) device counts|)"
       R"(GetAdaptersAddresses|SetupDi\w+|adapter addresses|(?:name|value) \S+ too long|)"
       R"(Path has \d+ hops|more than \d+ rails|No rails found|Graph search)",
       "NCCL 2.4-2.32 graph/ (topo.cc, xml.cc, paths.cc, search.cc, connect.cc, rings.cc), "
       "init.cc, "
       "os/",
       MessagePhase::kAny, CatalogueCause::kTopology, false,
       "could not make sense of the node's topology (GPUs, NICs, PCI, NVLink, CPUs)", nullptr,
       Area::kTopology, true},
      {"nccl.shm.more",
       R"([Ss]hared memory|\bSHM\b|Could not map|failed to extend|Multiple (?:starts|)"
       R"(ends) found in group|view of file|named pipe|[Pp]ipe name|NamedPipe)",
       "NCCL 2.4-2.32 misc/shmutils.cc, include/shm.h, transport/shm.cc, os/", MessagePhase::kAny,
       CatalogueCause::kShm, false, "could not set up shared memory with a local rank", nullptr,
       Area::kShm, true},
      {"nccl.proxy.service",
       R"(\[Proxy Service(?: UDS)?\]|\[Service thread\]|\[Proxy service\]|[Pp]roxy|opId|)"
       R"(op chain|\bpool \d+|[Ll]ist loop|Inactive op|dequeue|shared buffer|no transport for|)"
       R"(No transport found|abort state|abortFlag|[Rr]em Allocator)",
       "NCCL 2.4-2.32 proxy.cc, transport.cc, bootstrap.cc", MessagePhase::kAny,
       CatalogueCause::kProxy, false, "had NCCL's proxy thread fail", nullptr, Area::kProxy, true},
      {"nccl.socket.more",
       R"(\bNet : |NET/Socket|Socket :|ncclSocket\w*|ncclOsSocket\w*|socket(?:Finalize|Try|)"
       R"(Poll|Progress|Start)\w*|[Ss]ocket (?:creation|state|is invalid|at index|pair|)"
       R"(handle)|NULL socket|invalid socket|(?:over|to|for) socket|\bUDS\b|[Aa]ccept failed|)"
       R"([Aa]ccept:|poll\(\) (?:failed|returned)|AF_INET|IPv4_or_hostname|IPv6|)"
       R"(address family|IP family|same subnet as remote|connect returned|\bWSA\w*|)"
       R"(ioctlsocket|[Rr]eceiving data over|[Ss]ending data over|OOB_NET_IFNAME|)"
       R"(NCCL_COMM_ID is set|Failed to send: |Failed to recv: |close socket|ncclNetIfs)",
       "NCCL 2.4-2.32 misc/socket.cc, include/socket.h, transport/net_socket.cc, os/, "
       "bootstrap.cc",
       MessagePhase::kAny, CatalogueCause::kSocket, false, "had a socket between ranks fail",
       nullptr, Area::kNetSocket, true},
      {"nccl.system",
       R"(Call to \S+(?: \S+)? failed|[Tt]hread (?:creation|join) failed|pthread_join|join thread|)"
       R"([Mm]alloc(?: of)? .*failed|malloc\(|calloc\(|returned null|Allocation failed|)"
       R"(Failed to (?:malloc|allocate)|[Uu]nable to allocate|random_device|getRandomData|)"
       R"(close failed|environment variable|DuplicateHandle|WriteFile|SetNamedPipe|)"
       R"(Name too large|CloseHandle|capture mode|too many async|Too many async|)"
       R"(allocate memory)",
       "NCCL 2.4-2.32 include/checks.h, include/utils.h, misc/utils.cc, group.cc, os/",
       MessagePhase::kAny, CatalogueCause::kSystem, false,
       "had a system call or host allocation fail", nullptr, Area::kSystem, true},
      // --- NCCL's teardown and its notices of skew (before the internal checks,
      // whose words, commReclaim, the older teardown text shares)
      {"nccl.teardown.cleanup",
       R"(cleanup comm \S+ rank -?\d+ failed in destroy/abort|commDestroySync error)",
       "NCCL 2.14-2.30 src/init.cc commReclaim (WARN); 2.32 (NCCL ATTN)", MessagePhase::kRuntime,
       CatalogueCause::kTeardown, false,
       "failed to free a communicator in ncclCommDestroy or ncclCommAbort (its peers, or its "
       "network, were already gone)",
       nullptr, Area::kInit, true},
      {"nccl.version.git", R"(Mismatched NCCL git versions detected)",
       "NCCL 2.32 src/init.cc (NCCL ATTN: rank 0's build fingerprint against each rank's)",
       MessagePhase::kInit, CatalogueCause::kVersionSkew, false,
       "found a rank running another build of NCCL than rank 0's (another git version under the "
       "same release number)",
       nullptr, Area::kVersion, true},
      {"nccl.internal",
       R"([Ii]nternal error|[Uu]nexpected|[Uu]nknown (?:collective|pattern|collnet|command|)"
       R"(message|notification|device|desc|handle|event|netDevs|\w+ type)|)"
       R"([Mm]ismatched response|doesn't match|already completed|has been lost|)"
       R"(out of (?:bounds?|range)|is NULL|NULL user pointer|wrong (?:magic|type|socket)|)"
       R"(not ready|unexpected socket|[Ss]chedule (?:creation|not aligned)|plan not aligned|)"
       R"(has bugs|[Tt]oo many (?:aggregated|collectives|work|connections)|)"
       R"(too many (?:collectives|work elements)|refcount|reference count|Could not find pool|)"
       R"(Couldn't find|[Nn]o allocation found|shadow pool|extends beyond|is not power of 2|)"
       R"(Intrusive address map|[Oo]bject pointer|Group creation failed|[Cc]ould not receive|)"
       R"(not found|\bRAS\b|[Kk]ey size|regBufType|job error|[Ee]rror waiting|Deregister|)"
       R"(deregister|Failure in host setup|hostStreamPlanCallback|helper resource|)"
       R"([Cc]ontext \d+ is invalid|[Ss]ignal index|sizes: want|reqSize|respSize|)"
       R"(Cannot store sizes|already (?:suspended|exported)|[Nn]ot in suspended state|)"
       R"(sizes of|launch too many|[Cc]ould not find|Already|commReclaim|SetAsyncError|)"
       R"(client status|PXN|neither send or recv|work queue is not empty|[Aa]sync job state|)"
       R"(group blocking state|communicator mismatch|FIFO size|work descriptor)",
       "NCCL 2.4-2.32 (NCCL's own consistency checks, all subsystems)", MessagePhase::kAny,
       CatalogueCause::kInternal, false, "hit one of NCCL's internal consistency checks", nullptr,
       Area::kInternal, true},
      // --- PyTorch's other distributed messages (tests/data/torch_messages.tsv, made
      // by scripts/extract-torch-messages.py from the torch wheels of 2.0 to 2.15):
      // by the words of the source that prints them, after every specific
      // message above. Never NCCL-only: they are the framework's own lines.
      {"torch.store.socket",
       R"(The (?:client|server) socket|The socket (?:cannot|is not)|waitForInput: (?:poll for )?)"
       R"(socket|TCPStore|UV Store (?:addr|bind|listen)|c10::Store trace)",
       "PyTorch 2.0-2.15 torch/csrc/distributed/c10d/socket.cpp, TCPStore.cpp, "
       "TCPStoreLibUvBackend.cpp",
       MessagePhase::kInit, CatalogueCause::kRendezvous, true,
       "had its rendezvous store (TCPStore) or a socket of it fail",
       R"((?:socket on|connect to) \[?([^\]\s,]+?)\]?:(\d+))", Area::kC10dStore},
      {"torch.c10d.init_method",
       R"([Rr]endezvous handler for|re-?rendezvous using \w+://|)"
       R"(Error initializing torch\.distributed using)",
       "PyTorch 2.0-2.15 torch/distributed/rendezvous.py (init_method's URL: env://, tcp://, "
       "file://)",
       MessagePhase::kInit, CatalogueCause::kRendezvous, false,
       "could not rendezvous through the init_method URL it was given (its scheme, or a second "
       "rendezvous through it)",
       nullptr, Area::kC10dInit},
      {"torch.elastic.other",
       R"([Rr]endezvous|\betcd\b|Etcd|C10d store|--master-(?:port|addr)|--node-rank|)"
       R"(minimum number of nodes|maximum number of nodes|run id must|state object is corrupt|)"
       R"(read timeout must|out of tree plugin|timer has already started|store type given|)"
       R"(timeout \(\S+\) must be positive|protocol must be HTTP|must be of type str or bytes|)"
       R"(cas_backoff|Shutdown failed|Socket creation attempt|create a socket|)"
       R"(failed to observe version)",
       "PyTorch 2.0-2.15 torch/distributed/elastic/rendezvous/ (api.py, dynamic_rendezvous.py, "
       "c10d_rendezvous_backend.py, etcd_*.py, static_tcp_rendezvous.py, utils.py)",
       MessagePhase::kInit, CatalogueCause::kRendezvous, true,
       "failed torchrun's rendezvous: its endpoint, backend or configuration", nullptr,
       Area::kTorchrun},
      {"torch.join.skew", R"(Detected uneven input skew)",
       "PyTorch 1.10-2.15 torch/distributed/algorithms/join.py (Join's skew warning)",
       MessagePhase::kRuntime, CatalogueCause::kUneven, false,
       "had far fewer inputs than the other ranks (uneven inputs)", nullptr, Area::kDdp},
      {"torch.c10d.monitored_barrier",
       R"(failed to pass monitoredBarrier|timed out in monitoredBarrier|)"
       R"(received errors while waiting|Monitored Barrier encountered error)",
       "PyTorch 1.10-2.15 torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, "
       "ProcessGroupWrapper.cpp (monitored_barrier)",
       MessagePhase::kRuntime, CatalogueCause::kTorchBarrier, false,
       "waited at a monitored barrier that other ranks never reached", nullptr, Area::kC10d},
      {"torch.c10d.unsupported",
       R"(does not support monitoredBarrier|only GLOO supports monitored barrier)",
       "PyTorch 2.0-2.15 torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp, Backend.hpp",
       MessagePhase::kAny, CatalogueCause::kC10dUsage, false,
       "called a process-group operation its backend does not have", nullptr, Area::kC10d},
      {"torch.ddp.other",
       R"(DistributedDataParallel|\bDDP\b|[Jj]oin(?:able| context manager| hook)|bucket view|)"
       R"(bucket_cap_mb|static_graph|find_unused_parameters|gradient_as_bucket_view|)"
       R"(python reducer|broadcast_buffers|forward_sync_buffers|delay_all_reduce|AccumulateGrad|)"
       R"(device_mesh|[Dd]elayed gradient|logger must not be None|hook must be callable|)"
       R"(mixed precision config|Manual backward finalization|unused parameters map|device mesh)",
       "PyTorch 2.0-2.15 torch/nn/parallel/distributed.py, torch/distributed/algorithms/join.py, "
       "torch/csrc/distributed/c10d/reducer.cpp",
       MessagePhase::kRuntime, CatalogueCause::kDdpMisc, true,
       "had DistributedDataParallel refuse how it was built or used", nullptr, Area::kDdp},
      {"torch.watchdog.other",
       R"([Ww]atchdog (?:caught|got stuck|hang|detected|wrote aborted)|detected by watchdog|)"
       R"(blocking the watchdog|watchdog is not actually stuck|indeed a watchdog hang|)"
       R"([Hh]eartbeat monitor|monitor thread timeout|Timeout at (?:collective|NCCL)|)"
       R"(lagging(?:/dead/mismatched)? ranks|DESYNC_DEBUG|timed out in blocking wait|)"
       R"(NCCL timeout|NCCL operation timed out|collective operation timeout|)"
       R"(HEARTBEAT_TIMEOUT_SEC|timeout watchdog|deadlock state in watchdog)",
       "PyTorch 2.0-2.15 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog, heartbeat "
       "monitor, desync report)",
       MessagePhase::kRuntime, CatalogueCause::kWatchdog, false,
       "timed out in a collective, or had PyTorch's NCCL watchdog report a hang", nullptr,
       Area::kC10dNccl},
      {"torch.nccl.process_group",
       R"(ProcessGroupNCCL(?:'s|:? |,|\.Options)|ProcessGroupNCCL::(?:split|shrink|WorkNCCL::abort)|)"
       R"(WindowNCCL|NCCLPG|NCCL [\w -]{0,40}failed|NCCL [Cc]ommunicators? (?:encountered|was |)"
       R"(already|cannot|not initialized|since)|(?:abort(?:ed)?|from|aborting) (?:\w+ )?(?:an |the |its )?)"
       R"(NCCL [Cc]ommunicator|NCCL (?:\w+ ){0,2}(?:[Aa]sync Error|Last Error|operation failed|)"
       R"(stream resources|tensor allocation|host-side|symmetric|does not|shrink|split|timeout)|)"
       R"((?:with|for) NCCL(?: process group|:| reductions|$)|NCCL process group|NCCL_SPLIT_NOCOLOR|)"
       R"(TORCH_NCCL_\w+ must|\bnccl_\w+: |NCCL unique ID|ncclMemFree|in this NCCL version|)"
       R"(NCCL Error|NCCL error!|ncclInvalidUsage|NCCL mem allocator|nccl2 shrink|)"
       R"(NCCLSymmetricMemory|NCCLPreMulSum|TORCH_SYMMMEM)",
       "PyTorch 2.0-2.15 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, NCCLUtils.cpp/.hpp",
       MessagePhase::kRuntime, CatalogueCause::kTorchNccl, true,
       "had PyTorch's NCCL process group report an NCCL call or communicator failing", nullptr,
       Area::kC10dNccl},
      {"torch.c10d.usage",
       R"([Pp]rocess ?[Gg]roup(?:[ .,;:']|s\b|$)|ProcessGroupWrapper|init_process_group|init_method|)"
       R"(new_group|[Ss]ubgroup|)"
       R"(split group|split_ranks|group_size|[Gg]roup (?:name|rank|\S+ is not registered)|)"
       R"(group_(?:desc|name)|[Dd]efault (?:group|device|pg)|parent group|not part of the|)"
       R"(Global rank|\bRank \S+ (?:has appeared|is out of range)|rank must be|world_size must|)"
       R"(`(?:rank|url|world_size)` must|(?:rank|world size|port number|path) (?:parameter )?)"
       R"(missing|world size (?:\(\S+\) )?must be divisible|world size set by|)"
       R"(node-specific arguments|[Bb]ackend (?:type|mismatch|names must|'\S+' is not present|)"
       R"(for device|\S+\) Debug)|c10d backend|Requested backend|Distributed package|urllib|)"
       R"(timedelta|device_id|monitored_barrier|ProcessGroupGloo|hostname cannot|)"
       R"(\branks (?:must|list)|bound device|\bisend\b|Multiple backends|)"
       R"(use_local_synchronization|port must have value|accelerator support)",
       "PyTorch 2.0-2.15 torch/distributed/distributed_c10d.py (init_process_group, new_group, "
       "split_group, destroy_process_group), torch/distributed/rendezvous.py",
       MessagePhase::kAny, CatalogueCause::kC10dUsage, true,
       "had torch.distributed refuse how a process group was set up or used", nullptr,
       Area::kC10dInit},
  };
  return table;
}

// The table's patterns, compiled once: all of them in one set (one pass
// over a line finds every message it holds), and each address pattern.
struct Matcher {
  Matcher() : set(Options(), RE2::UNANCHORED) {
    for (const CatalogueMessage& m : Table()) {
      std::string error;
      if (set.Add(m.pattern, &error) < 0) abort();  // a bad pattern is a bug in the table
      addresses.push_back(m.address ? std::make_unique<RE2>(m.address, RE2::Quiet) : nullptr);
    }
    if (!set.Compile()) abort();
  }
  static RE2::Options Options() {
    RE2::Options o;
    o.set_max_mem(int64_t{64} << 20);
    o.set_log_errors(false);
    return o;
  }
  RE2::Set set;
  std::vector<std::unique_ptr<RE2>> addresses;  // by the message's index
};

const Matcher& TheMatcher() {
  static const Matcher* matcher = new Matcher();
  return *matcher;
}

}  // namespace

Area NcclSourceArea(absl::string_view file) {
  // A path as NCCL's __FILE__ gives it, relative to src/ (an absolute
  // build path in some builds): the part from src/ on.
  if (const size_t src = file.rfind("src/"); src != absl::string_view::npos)
    file = file.substr(src + 4);
  static const struct {
    const char* prefix;
    Area area;
  } kAreas[] = {
      {"transport/net_ib", Area::kNetIb},
      {"transport/net_socket", Area::kNetSocket},
      {"transport/net", Area::kNet},
      {"transport/shm", Area::kShm},
      {"transport/p2p", Area::kP2p},
      {"transport/nvls", Area::kFabric},
      {"transport/coll_net", Area::kCollnet},
      {"transport/generic", Area::kTransport},
      {"transport.", Area::kTransport},
      {"misc/ibvwrap", Area::kIb},
      {"misc/ibvsymbols", Area::kIb},
      {"misc/shmutils", Area::kShm},
      {"misc/socket", Area::kSocket},
      {"misc/cudawrap", Area::kCuda},
      {"misc/strongstream", Area::kCuda},
      {"misc/nvmlwrap", Area::kNvml},
      {"misc/gdrwrap", Area::kGdr},
      {"misc/argcheck", Area::kUsage},
      {"misc/param", Area::kConfig},
      {"misc/mlx5dv", Area::kIb},
      {"bootstrap", Area::kBootstrap},
      {"graph/", Area::kTopology},
      {"proxy", Area::kProxy},
      {"plugin/", Area::kPlugin},
      {"net.cc", Area::kPlugin},
      {"enqueue", Area::kEnqueue},
      {"ras/", Area::kRas},
      {"register/", Area::kRegistration},
      {"init", Area::kInit},
      {"group", Area::kGroup},
      {"device/", Area::kDevice},
      {"allocator", Area::kMemory},
  };
  for (const auto& a : kAreas)
    if (absl::StartsWith(file, a.prefix)) return a.area;
  return Area::kNone;
}

const std::vector<CatalogueMessage>& CatalogueMessages() { return Table(); }

std::vector<const CatalogueMessage*> FindMessages(absl::string_view text) {
  std::vector<int> hits;
  std::vector<const CatalogueMessage*> out;
  if (!TheMatcher().set.Match(re2::StringPiece(text.data(), text.size()), &hits)) return out;
  std::sort(hits.begin(), hits.end());
  for (int h : hits) out.push_back(&Table()[static_cast<size_t>(h)]);
  return out;
}

const CatalogueMessage* FindMessage(absl::string_view text) {
  const std::vector<const CatalogueMessage*> all = FindMessages(text);
  return all.empty() ? nullptr : all.front();
}

const CatalogueMessage* FindMessageInOtherText(absl::string_view text) {
  for (const CatalogueMessage* m : FindMessages(text))
    if (!m->nccl_only) return m;
  return nullptr;
}

Area MessageArea(const CatalogueMessage& m) {
  return m.area != Area::kNone ? m.area : CauseOf(m).subsystem;
}

const CatalogueMessage* MessageById(absl::string_view id) {
  for (const CatalogueMessage& m : Table())
    if (id == m.id) return &m;
  return nullptr;
}

const MessageCause* CauseNamed(absl::string_view name) {
  for (const MessageCause& c : kCauses)
    if (name == c.name) return &c;
  return nullptr;
}

const MessageCause& CauseOf(CatalogueCause cause) {
  const size_t i = static_cast<size_t>(cause);
  // The table is in the enum's order (checked when it is first used).
  static const bool in_order = [] {
    for (size_t k = 0; k < std::size(kCauses); ++k)
      if (static_cast<size_t>(kCauses[k].id) != k) return false;
    return true;
  }();
  if (!in_order || i >= std::size(kCauses)) abort();
  return kCauses[i];
}

const MessageCause& CauseOf(const CatalogueMessage& m) { return CauseOf(m.cause); }

std::string MessageAddress(const CatalogueMessage& m, absl::string_view text) {
  const size_t index = static_cast<size_t>(&m - Table().data());
  if (index >= Table().size() || !TheMatcher().addresses[index]) return "";
  const RE2& re = *TheMatcher().addresses[index];
  const re2::StringPiece piece(text.data(), text.size());
  std::string host, port;
  if (re.NumberOfCapturingGroups() >= 2) {
    if (RE2::PartialMatch(piece, re, &host, &port)) {
      // An IPv6 host keeps its brackets ("[::]:29500"), so the port stays apart.
      if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
      return absl::StrCat(host, ":", port);
    }
    return "";
  }
  if (RE2::PartialMatch(piece, re, &host)) return host;
  return "";
}

bool WarningOnly(const CatalogueMessage& m) {
  return m.cause == CatalogueCause::kTeardownRisk || m.cause == CatalogueCause::kNetNotice ||
         m.cause == CatalogueCause::kSettingIgnored;
}

bool ErrorWords(absl::string_view text) {
  for (const char* w : {"rror", "failed", "Failed", "failure", "Failure", "refused", "timed out",
                        "not supported", "unable", "Unable", "cannot", "Cannot"})
    if (absl::StrContains(text, w)) return true;
  return false;
}

}  // namespace ncclwatch::decoder
