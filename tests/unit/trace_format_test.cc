// The trace format: the ring file's layout is pinned, the shim's hand
// encoder produces what libprotobuf parses, and the field numbers the shim
// uses are the ones trace.proto declares.

#include <google/protobuf/descriptor.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>

#include "ncclwatch/ring_format.h"
#include "ncclwatch/trace.pb.h"
#include "ncclwatch/trace_fields.h"
#include "ncclwatch/wire_writer.h"

namespace pb = ncclwatch::trace::v1;
namespace f = ncclwatch::fields;

TEST_CASE("the ring file's layout is pinned", "[format]") {
  CHECK(sizeof(ncclwatch_ring_header) == 512);
  CHECK(offsetof(ncclwatch_ring_header, magic) == 0);
  CHECK(offsetof(ncclwatch_ring_header, format_version) == 8);
  CHECK(offsetof(ncclwatch_ring_header, schema_version) == 12);
  CHECK(offsetof(ncclwatch_ring_header, header_bytes) == 16);
  CHECK(offsetof(ncclwatch_ring_header, endian_check) == 20);
  CHECK(offsetof(ncclwatch_ring_header, pointer_bytes) == 24);
  CHECK(offsetof(ncclwatch_ring_header, slot_bytes) == 26);
  CHECK(offsetof(ncclwatch_ring_header, clock) == 28);
  CHECK(offsetof(ncclwatch_ring_header, file_bytes) == 32);
  CHECK(offsetof(ncclwatch_ring_header, pinned_offset) == 40);
  CHECK(offsetof(ncclwatch_ring_header, pinned_slots) == 48);
  CHECK(offsetof(ncclwatch_ring_header, ring_offset) == 56);
  CHECK(offsetof(ncclwatch_ring_header, ring_slots) == 64);
  CHECK(offsetof(ncclwatch_ring_header, pid) == 72);
  CHECK(offsetof(ncclwatch_ring_header, created_realtime_ns) == 80);
  CHECK(offsetof(ncclwatch_ring_header, host) == 88);
  // Format 3: claim blocks.
  CHECK(offsetof(ncclwatch_ring_header, claim_block_slots) == 152);
  CHECK(offsetof(ncclwatch_ring_header, claim_blocks_used) == 156);
  CHECK(offsetof(ncclwatch_ring_header, claim_block_ticks) == 160);
  CHECK(offsetof(ncclwatch_ring_header, reserved1) == 168);
  CHECK(offsetof(ncclwatch_ring_header, pinned_next) == 256);
  CHECK(offsetof(ncclwatch_ring_header, ring_next) == 320);
  CHECK(offsetof(ncclwatch_ring_header, pinned_overflow) == 384);
  CHECK(sizeof(ncclwatch_slot_header) == 16);
  CHECK(offsetof(ncclwatch_slot_header, stamp) == 0);
  CHECK(offsetof(ncclwatch_slot_header, length) == 8);
  CHECK(offsetof(ncclwatch_slot_header, kind) == 10);
  CHECK(offsetof(ncclwatch_slot_header, flags) == 11);
  CHECK(offsetof(ncclwatch_slot_header, record_bytes) == 12);
  CHECK(NCCLWATCH_SLOT_CLAIMED == 1);
  CHECK(NCCLWATCH_STAMP_WRITING == uint64_t{1} << 63);
  CHECK(NCCLWATCH_SLOT_PAYLOAD_BYTES == 112);
  // Format 2's call slot: one payload exactly, every field at its place.
  CHECK(NCCLWATCH_RING_FORMAT_VERSION == 4);
  CHECK(NCCLWATCH_RING_FORMAT_OLDEST_READ == 1);
  CHECK(NCCLWATCH_SLOT_COLLECTIVE == 6);
  CHECK(NCCLWATCH_SLOT_P2P == 7);
  CHECK(NCCLWATCH_SLOT_GROUP == 8);
  // Format 4's GPU-time slot: one payload exactly, every field at its place.
  CHECK(NCCLWATCH_SLOT_GPU_TIME == 9);
  CHECK(sizeof(ncclwatch_gpu_time_slot) == 112);
  CHECK(offsetof(ncclwatch_gpu_time_slot, t) == 0);
  CHECK(offsetof(ncclwatch_gpu_time_slot, thread) == 8);
  CHECK(offsetof(ncclwatch_gpu_time_slot, call) == 12);
  CHECK(offsetof(ncclwatch_gpu_time_slot, comm) == 16);
  CHECK(offsetof(ncclwatch_gpu_time_slot, seq) == 24);
  CHECK(offsetof(ncclwatch_gpu_time_slot, collectives) == 32);
  CHECK(offsetof(ncclwatch_gpu_time_slot, begin_ns) == 40);
  CHECK(offsetof(ncclwatch_gpu_time_slot, end_ns) == 48);
  CHECK(offsetof(ncclwatch_gpu_time_slot, gpu_ns) == 56);
  CHECK(offsetof(ncclwatch_gpu_time_slot, anchor_error_ns) == 64);
  CHECK(offsetof(ncclwatch_gpu_time_slot, group_ops) == 72);
  CHECK(offsetof(ncclwatch_gpu_time_slot, reserved) == 76);
  CHECK(NCCLWATCH_CALL_IN_GROUP == 1);
  CHECK(sizeof(ncclwatch_call_slot) == 112);
  CHECK(offsetof(ncclwatch_call_slot, t) == 0);
  CHECK(offsetof(ncclwatch_call_slot, result) == 8);
  CHECK(offsetof(ncclwatch_call_slot, thread) == 12);
  CHECK(offsetof(ncclwatch_call_slot, comm) == 16);
  CHECK(offsetof(ncclwatch_call_slot, seq) == 24);
  CHECK(offsetof(ncclwatch_call_slot, count) == 32);
  CHECK(offsetof(ncclwatch_call_slot, stream) == 40);
  CHECK(offsetof(ncclwatch_call_slot, sendbuff) == 48);
  CHECK(offsetof(ncclwatch_call_slot, recvbuff) == 56);
  CHECK(offsetof(ncclwatch_call_slot, group) == 64);
  CHECK(offsetof(ncclwatch_call_slot, caller) == 72);
  CHECK(offsetof(ncclwatch_call_slot, call) == 80);
  CHECK(offsetof(ncclwatch_call_slot, datatype) == 84);
  CHECK(offsetof(ncclwatch_call_slot, redop) == 88);
  CHECK(offsetof(ncclwatch_call_slot, root) == 92);
  CHECK(offsetof(ncclwatch_call_slot, peer) == 96);
  CHECK(offsetof(ncclwatch_call_slot, rank) == 100);
  CHECK(offsetof(ncclwatch_call_slot, depth) == 104);
  CHECK(offsetof(ncclwatch_call_slot, flags) == 108);
  CHECK(NCCLWATCH_MAX_RECORD_BYTES == 73 * 112);
}

TEST_CASE("the field numbers the shim writes are trace.proto's", "[format]") {
  auto number = [](const google::protobuf::Descriptor* d, const char* field) {
    const google::protobuf::FieldDescriptor* fd = d->FindFieldByName(field);
    INFO(d->name() << "." << field);
    REQUIRE(fd != nullptr);
    return static_cast<uint32_t>(fd->number());
  };
  const auto* rec = pb::Record::descriptor();
  CHECK(number(rec, "t") == f::record::kT);
  CHECK(number(rec, "thread") == f::record::kThread);
  CHECK(number(rec, "process_start") == f::record::kProcessStart);
  CHECK(number(rec, "process_end") == f::record::kProcessEnd);
  CHECK(number(rec, "time_anchor") == f::record::kTimeAnchor);
  CHECK(number(rec, "module") == f::record::kModule);
  CHECK(number(rec, "comm_init_begin") == f::record::kCommInitBegin);
  CHECK(number(rec, "comm_init_end") == f::record::kCommInitEnd);
  CHECK(number(rec, "comm_end") == f::record::kCommEnd);
  CHECK(number(rec, "collective") == f::record::kCollective);
  CHECK(number(rec, "p2p") == f::record::kP2p);
  CHECK(number(rec, "group") == f::record::kGroup);
  CHECK(number(rec, "api") == f::record::kApi);
  CHECK(number(rec, "fatal_signal") == f::record::kFatalSignal);

  const auto* ps = pb::ProcessStart::descriptor();
  CHECK(number(ps, "pid") == f::process_start::kPid);
  CHECK(number(ps, "host") == f::process_start::kHost);
  CHECK(number(ps, "global_rank") == f::process_start::kGlobalRank);
  CHECK(number(ps, "rank_source") == f::process_start::kRankSource);
  CHECK(number(ps, "world_size") == f::process_start::kWorldSize);
  CHECK(number(ps, "local_rank") == f::process_start::kLocalRank);
  CHECK(number(ps, "exe") == f::process_start::kExe);
  CHECK(number(ps, "job_id") == f::process_start::kJobId);
  CHECK(number(ps, "shim_version") == f::process_start::kShimVersion);
  CHECK(number(ps, "pid_namespace") == f::process_start::kPidNamespace);
  CHECK(number(pb::ProcessEnd::descriptor(), "how") == f::process_end::kHow);
  CHECK(number(pb::ProcessEnd::descriptor(), "exit_code") == f::process_end::kExitCode);
  CHECK(pb::ProcessEnd::EXIT == static_cast<int>(f::process_end::kHowExit));
  CHECK(pb::ProcessEnd::UNDERSCORE_EXIT == static_cast<int>(f::process_end::kHowUnderscoreExit));
  CHECK(pb::ProcessEnd::EXEC == static_cast<int>(f::process_end::kHowExec));
  CHECK(pb::ProcessEnd::EXEC_FAILED == static_cast<int>(f::process_end::kHowExecFailed));
  CHECK(pb::ProcessEnd::QUICK_EXIT == static_cast<int>(f::process_end::kHowQuickExit));
  const auto* ta = pb::TimeAnchor::descriptor();
  CHECK(number(ta, "t") == f::time_anchor::kT);
  CHECK(number(ta, "monotonic_ns") == f::time_anchor::kMonotonicNs);
  CHECK(number(ta, "realtime_ns") == f::time_anchor::kRealtimeNs);
  const auto* mo = pb::Module::descriptor();
  CHECK(number(mo, "path") == f::module::kPath);
  CHECK(number(mo, "base") == f::module::kBase);
  CHECK(number(mo, "start") == f::module::kStart);
  CHECK(number(mo, "end") == f::module::kEnd);
  CHECK(number(mo, "build_id") == f::module::kBuildId);
  const auto* ib = pb::CommInitBegin::descriptor();
  CHECK(number(ib, "comm") == f::comm_init_begin::kComm);
  CHECK(number(ib, "call") == f::comm_init_begin::kCall);
  CHECK(number(ib, "nranks") == f::comm_init_begin::kNranks);
  CHECK(number(ib, "rank") == f::comm_init_begin::kRank);
  CHECK(number(ib, "parent") == f::comm_init_begin::kParent);
  CHECK(number(ib, "color") == f::comm_init_begin::kColor);
  CHECK(number(ib, "key") == f::comm_init_begin::kKey);
  CHECK(number(ib, "split_index") == f::comm_init_begin::kSplitIndex);
  CHECK(number(ib, "excluded") == f::comm_init_begin::kExcluded);
  CHECK(number(ib, "blocking") == f::comm_init_begin::kBlocking);
  CHECK(number(ib, "caller") == f::comm_init_begin::kCaller);
  const auto* ie = pb::CommInitEnd::descriptor();
  CHECK(number(ie, "comm") == f::comm_init_end::kComm);
  CHECK(number(ie, "result") == f::comm_init_end::kResult);
  CHECK(number(ie, "handle") == f::comm_init_end::kHandle);
  CHECK(number(ie, "rank") == f::comm_init_end::kRank);
  CHECK(number(ie, "device") == f::comm_init_end::kDevice);
  CHECK(number(ie, "nranks") == f::comm_init_end::kNranks);
  const auto* ce = pb::CommEnd::descriptor();
  CHECK(number(ce, "comm") == f::comm_end::kComm);
  CHECK(number(ce, "handle") == f::comm_end::kHandle);
  CHECK(number(ce, "call") == f::comm_end::kCall);
  CHECK(number(ce, "result") == f::comm_end::kResult);
  CHECK(number(ce, "rank") == f::comm_end::kRank);
  const auto* co = pb::Collective::descriptor();
  CHECK(number(co, "result") == f::collective::kResult);
  CHECK(number(co, "comm") == f::collective::kComm);
  CHECK(number(co, "seq") == f::collective::kSeq);
  CHECK(number(co, "call") == f::collective::kCall);
  CHECK(number(co, "count") == f::collective::kCount);
  CHECK(number(co, "datatype") == f::collective::kDatatype);
  CHECK(number(co, "redop") == f::collective::kRedop);
  CHECK(number(co, "root") == f::collective::kRoot);
  CHECK(number(co, "stream") == f::collective::kStream);
  CHECK(number(co, "sendbuff") == f::collective::kSendbuff);
  CHECK(number(co, "recvbuff") == f::collective::kRecvbuff);
  CHECK(number(co, "group") == f::collective::kGroup);
  CHECK(number(co, "caller") == f::collective::kCaller);
  CHECK(number(co, "rank") == f::collective::kRank);
  const auto* pp = pb::PointToPoint::descriptor();
  CHECK(number(pp, "result") == f::p2p::kResult);
  CHECK(number(pp, "comm") == f::p2p::kComm);
  CHECK(number(pp, "seq") == f::p2p::kSeq);
  CHECK(number(pp, "send") == f::p2p::kSend);
  CHECK(number(pp, "peer") == f::p2p::kPeer);
  CHECK(number(pp, "count") == f::p2p::kCount);
  CHECK(number(pp, "datatype") == f::p2p::kDatatype);
  CHECK(number(pp, "stream") == f::p2p::kStream);
  CHECK(number(pp, "buff") == f::p2p::kBuff);
  CHECK(number(pp, "group") == f::p2p::kGroup);
  CHECK(number(pp, "caller") == f::p2p::kCaller);
  CHECK(number(pp, "rank") == f::p2p::kRank);
  const auto* gr = pb::Group::descriptor();
  CHECK(number(gr, "result") == f::group::kResult);
  CHECK(number(gr, "call") == f::group::kCall);
  CHECK(number(gr, "group") == f::group::kGroup);
  CHECK(number(gr, "depth") == f::group::kDepth);
  CHECK(number(gr, "caller") == f::group::kCaller);
  const auto* ap = pb::ApiCall::descriptor();
  CHECK(number(ap, "result") == f::api::kResult);
  CHECK(number(ap, "call") == f::api::kCall);
  CHECK(number(ap, "comm") == f::api::kComm);
  CHECK(number(ap, "value") == f::api::kValue);
  CHECK(number(ap, "caller") == f::api::kCaller);
  const auto* fs = pb::FatalSignal::descriptor();
  CHECK(number(fs, "signo") == f::fatal_signal::kSigno);
  CHECK(number(fs, "code") == f::fatal_signal::kCode);
  CHECK(number(fs, "address") == f::fatal_signal::kAddress);
  CHECK(number(fs, "sender_pid") == f::fatal_signal::kSenderPid);
  CHECK(number(fs, "disposition") == f::fatal_signal::kDisposition);
  CHECK(number(rec, "sys_call") == f::record::kSysCall);
  CHECK(number(rec, "nccl_error") == f::record::kNcclError);
  CHECK(number(rec, "inventory") == f::record::kInventory);
  CHECK(number(rec, "progress") == f::record::kProgress);
  CHECK(number(rec, "heartbeat") == f::record::kHeartbeat);
  CHECK(number(rec, "stall") == f::record::kStall);
  CHECK(number(rec, "cuda_error") == f::record::kCudaError);
  CHECK(number(rec, "completion_tracking") == f::record::kCompletionTracking);
  CHECK(number(rec, "untracked") == f::record::kUntracked);
  CHECK(number(ib, "device") == f::comm_init_begin::kDevice);
  CHECK(number(ib, "bus_id") == f::comm_init_begin::kBusId);
  CHECK(number(ib, "grow_id") == f::comm_init_begin::kGrowId);
  CHECK(number(rec, "coll_config") == f::record::kCollConfig);
  CHECK(number(rec, "one_sided") == f::record::kOneSided);
  const auto* cc = pb::CollConfig::descriptor();
  CHECK(number(cc, "comm") == f::coll_config::kComm);
  CHECK(number(cc, "seq") == f::coll_config::kSeq);
  CHECK(number(cc, "call") == f::coll_config::kCall);
  CHECK(number(cc, "size") == f::coll_config::kSize);
  CHECK(number(cc, "version") == f::coll_config::kVersion);
  CHECK(number(cc, "min_ctas") == f::coll_config::kMinCtas);
  CHECK(number(cc, "max_ctas") == f::coll_config::kMaxCtas);
  CHECK(number(cc, "nvls_ctas") == f::coll_config::kNvlsCtas);
  CHECK(number(cc, "cga_cluster_size") == f::coll_config::kCgaClusterSize);
  CHECK(number(cc, "alg_selection") == f::coll_config::kAlgSelection);
  CHECK(number(cc, "force_alg_selection") == f::coll_config::kForceAlgSelection);
  CHECK(number(cc, "cta_policy") == f::coll_config::kCtaPolicy);
  CHECK(number(cc, "user_profiler_tag") == f::coll_config::kUserProfilerTag);
  CHECK(number(cc, "launch_completion_event") == f::coll_config::kLaunchCompletionEvent);
  CHECK(number(cc, "ext_options") == f::coll_config::kExtOptions);
  CHECK(number(cc, "magic_ok") == f::coll_config::kMagicOk);
  const auto* os = pb::OneSided::descriptor();
  CHECK(number(os, "result") == f::one_sided::kResult);
  CHECK(number(os, "comm") == f::one_sided::kComm);
  CHECK(number(os, "call") == f::one_sided::kCall);
  CHECK(number(os, "peer") == f::one_sided::kPeer);
  CHECK(number(os, "seq") == f::one_sided::kSeq);
  CHECK(number(os, "count") == f::one_sided::kCount);
  CHECK(number(os, "datatype") == f::one_sided::kDatatype);
  CHECK(number(os, "window") == f::one_sided::kWindow);
  CHECK(number(os, "offset") == f::one_sided::kOffset);
  CHECK(number(os, "sig_idx") == f::one_sided::kSigIdx);
  CHECK(number(os, "ctx") == f::one_sided::kCtx);
  CHECK(number(os, "flags") == f::one_sided::kFlags);
  CHECK(number(os, "stream") == f::one_sided::kStream);
  CHECK(number(os, "buff") == f::one_sided::kBuff);
  CHECK(number(os, "group") == f::one_sided::kGroup);
  CHECK(number(os, "caller") == f::one_sided::kCaller);
  CHECK(number(os, "rank") == f::one_sided::kRank);
  CHECK(number(os, "waits") == f::one_sided::kWaits);
  CHECK(number(os, "n_desc") == f::one_sided::kNDesc);
  const auto* ow = pb::OneSided::Wait::descriptor();
  CHECK(number(ow, "peer") == f::one_sided::wait::kPeer);
  CHECK(number(ow, "op_cnt") == f::one_sided::wait::kOpCnt);
  CHECK(number(ow, "sig_idx") == f::one_sided::wait::kSigIdx);
  CHECK(number(ow, "ctx") == f::one_sided::wait::kCtx);
  CHECK(number(ow, "seq") == f::one_sided::wait::kSeq);

  const auto* sc = pb::SysCall::descriptor();
  CHECK(number(sc, "kind") == f::sys_call::kKind);
  CHECK(number(sc, "ret") == f::sys_call::kRet);
  CHECK(number(sc, "err") == f::sys_call::kErr);
  CHECK(number(sc, "fd") == f::sys_call::kFd);
  CHECK(number(sc, "path") == f::sys_call::kPath);
  CHECK(number(sc, "size") == f::sys_call::kSize);
  CHECK(number(sc, "offset") == f::sys_call::kOffset);
  CHECK(number(sc, "addr") == f::sys_call::kAddr);
  CHECK(number(sc, "arg") == f::sys_call::kArg);
  CHECK(number(sc, "in_call") == f::sys_call::kInCall);
  CHECK(number(sc, "from_nccl") == f::sys_call::kFromNccl);
  CHECK(number(sc, "caller") == f::sys_call::kCaller);
  const struct {
    const char* name;
    uint32_t value;
  } kinds[] = {{"SOCKET", f::sys_call::kSocket},
               {"BIND", f::sys_call::kBind},
               {"LISTEN", f::sys_call::kListen},
               {"CONNECT", f::sys_call::kConnect},
               {"ACCEPT", f::sys_call::kAccept},
               {"GETIFADDRS", f::sys_call::kGetifaddrs},
               {"SETSOCKOPT", f::sys_call::kSetsockopt},
               {"SHM_OPEN", f::sys_call::kShmOpen},
               {"OPEN", f::sys_call::kOpen},
               {"MKSTEMP", f::sys_call::kMkstemp},
               {"FALLOCATE", f::sys_call::kFallocate},
               {"POSIX_FALLOCATE", f::sys_call::kPosixFallocate},
               {"FTRUNCATE", f::sys_call::kFtruncate},
               {"MMAP", f::sys_call::kMmap},
               {"UNLINK", f::sys_call::kUnlink},
               {"DLOPEN", f::sys_call::kDlopen},
               {"VERBS", f::sys_call::kVerbs}};
  for (const auto& k : kinds) {
    INFO(k.name);
    const auto* v = pb::SysCall::Kind_descriptor()->FindValueByName(k.name);
    REQUIRE(v != nullptr);
    CHECK(static_cast<uint32_t>(v->number()) == k.value);
  }

  const auto* ne = pb::NcclError::descriptor();
  CHECK(number(ne, "call") == f::nccl_error::kCall);
  CHECK(number(ne, "result") == f::nccl_error::kResult);
  CHECK(number(ne, "comm") == f::nccl_error::kComm);
  CHECK(number(ne, "last_error") == f::nccl_error::kLastError);
  CHECK(number(ne, "async") == f::nccl_error::kAsync);

  const auto* ct = pb::CompletionTracking::descriptor();
  CHECK(number(ct, "comm") == f::completion_tracking::kComm);
  CHECK(number(ct, "mechanism") == f::completion_tracking::kMechanism);
  CHECK(number(ct, "why_not") == f::completion_tracking::kWhyNot);
  CHECK(number(ct, "markers") == f::completion_tracking::kMarkers);
  CHECK(number(ct, "device") == f::completion_tracking::kDevice);
  CHECK(pb::CompletionTracking::NONE == static_cast<int>(f::completion_tracking::kNone));
  CHECK(pb::CompletionTracking::CUDA_EVENTS ==
        static_cast<int>(f::completion_tracking::kCudaEvents));
  const auto* pr = pb::Progress::descriptor();
  CHECK(number(pr, "comm") == f::progress::kComm);
  CHECK(number(pr, "collectives") == f::progress::kCollectives);
  CHECK(number(pr, "enqueued_t") == f::progress::kEnqueuedT);
  CHECK(number(pr, "pending") == f::progress::kPending);
  CHECK(number(pr, "issued") == f::progress::kIssued);
  CHECK(number(pb::Heartbeat::descriptor(), "beat") == f::heartbeat::kBeat);
  CHECK(number(pb::Heartbeat::descriptor(), "interval_ms") == f::heartbeat::kIntervalMs);
  const auto* st = pb::Stall::descriptor();
  CHECK(number(st, "comm") == f::stall::kComm);
  CHECK(number(st, "call") == f::stall::kCall);
  CHECK(number(st, "seq") == f::stall::kSeq);
  CHECK(number(st, "peer") == f::stall::kPeer);
  CHECK(number(st, "send") == f::stall::kSend);
  CHECK(number(st, "waited_ms") == f::stall::kWaitedMs);
  CHECK(number(st, "completed") == f::stall::kCompleted);
  CHECK(number(st, "pending") == f::stall::kPending);
  CHECK(number(st, "group_ops") == f::stall::kGroupOps);
  CHECK(number(st, "rank") == f::stall::kRank);
  CHECK(number(st, "nranks") == f::stall::kNranks);
  const auto* cu = pb::CudaError::descriptor();
  CHECK(number(cu, "comm") == f::cuda_error::kComm);
  CHECK(number(cu, "result") == f::cuda_error::kResult);
  CHECK(number(cu, "name") == f::cuda_error::kName);
  CHECK(number(cu, "text") == f::cuda_error::kText);
  CHECK(number(cu, "device") == f::cuda_error::kDevice);
  CHECK(number(cu, "where") == f::cuda_error::kWhere);
  CHECK(number(cu, "seq") == f::cuda_error::kSeq);
  CHECK(pb::CudaError::EVENT_QUERY == f::cuda_error::kWhereEventQuery);
  CHECK(pb::CudaError::EVENT_RECORD == f::cuda_error::kWhereEventRecord);
  const auto* ut = pb::Untracked::descriptor();
  CHECK(number(ut, "comm") == f::untracked::kComm);
  CHECK(number(ut, "call") == f::untracked::kCall);
  CHECK(number(ut, "seq") == f::untracked::kSeq);
  CHECK(number(ut, "reason") == f::untracked::kReason);
  CHECK(pb::Untracked::CAPTURED == static_cast<int>(f::untracked::kCaptured));
  CHECK(pb::Untracked::IN_PROGRESS == static_cast<int>(f::untracked::kInProgress));
  const auto* iv = pb::Inventory::descriptor();
  CHECK(number(iv, "env") == f::inventory::kEnv);
  CHECK(number(iv, "nccl_version") == f::inventory::kNcclVersion);
  CHECK(number(iv, "nccl_path") == f::inventory::kNcclPath);
  CHECK(number(iv, "cuda_driver_version") == f::inventory::kCudaDriverVersion);
  CHECK(number(iv, "cuda_runtime_version") == f::inventory::kCudaRuntimeVersion);
  CHECK(number(iv, "framework") == f::inventory::kFramework);
  CHECK(number(iv, "framework_path") == f::inventory::kFrameworkPath);
  CHECK(number(iv, "interfaces") == f::inventory::kInterfaces);
  CHECK(number(iv, "shm_known") == f::inventory::kShmKnown);
  CHECK(number(iv, "shm_size") == f::inventory::kShmSize);
  CHECK(number(iv, "shm_free") == f::inventory::kShmFree);
  CHECK(number(iv, "memlock_soft") == f::inventory::kMemlockSoft);
  CHECK(number(iv, "memlock_hard") == f::inventory::kMemlockHard);
  CHECK(number(iv, "cgroup") == f::inventory::kCgroup);
  CHECK(number(iv, "container") == f::inventory::kContainer);
  CHECK(number(pb::Inventory::Variable::descriptor(), "name") == f::inventory::variable::kName);
  CHECK(number(pb::Inventory::Variable::descriptor(), "value") == f::inventory::variable::kValue);
  const auto* itf = pb::Inventory::Interface::descriptor();
  CHECK(number(itf, "name") == f::inventory::interface::kName);
  CHECK(number(itf, "flags") == f::inventory::interface::kFlags);
  CHECK(number(itf, "addr") == f::inventory::interface::kAddr);
  CHECK(number(itf, "prefix_len") == f::inventory::interface::kPrefixLen);
}

TEST_CASE("every Call value the shim uses is trace.proto's", "[format]") {
  const auto* e = pb::Call_descriptor();
  struct Pair {
    const char* name;
    uint32_t value;
  };
  const Pair pairs[] = {
      {"ALL_REDUCE", f::kAllReduce},
      {"BROADCAST", f::kBroadcast},
      {"BCAST", f::kBcast},
      {"REDUCE", f::kReduce},
      {"ALL_GATHER", f::kAllGather},
      {"REDUCE_SCATTER", f::kReduceScatter},
      {"ALL_TO_ALL", f::kAllToAll},
      {"GATHER", f::kGather},
      {"SCATTER", f::kScatter},
      {"SEND", f::kSend},
      {"RECV", f::kRecv},
      {"GROUP_START", f::kGroupStart},
      {"GROUP_END", f::kGroupEnd},
      {"GROUP_SIMULATE_END", f::kGroupSimulateEnd},
      {"GET_UNIQUE_ID", f::kGetUniqueId},
      {"COMM_INIT_RANK", f::kCommInitRank},
      {"COMM_INIT_RANK_CONFIG", f::kCommInitRankConfig},
      {"COMM_INIT_ALL", f::kCommInitAll},
      {"COMM_INIT_RANK_SCALABLE", f::kCommInitRankScalable},
      {"COMM_SPLIT", f::kCommSplit},
      {"COMM_SHRINK", f::kCommShrink},
      {"COMM_FINALIZE", f::kCommFinalize},
      {"COMM_DESTROY", f::kCommDestroy},
      {"COMM_ABORT", f::kCommAbort},
      {"COMM_REVOKE", f::kCommRevoke},
      {"COMM_GET_ASYNC_ERROR", f::kCommGetAsyncError},
      {"COMM_COUNT", f::kCommCount},
      {"COMM_CU_DEVICE", f::kCommCuDevice},
      {"COMM_USER_RANK", f::kCommUserRank},
      {"GET_VERSION", f::kGetVersion},
      {"GET_ERROR_STRING", f::kGetErrorString},
      {"GET_LAST_ERROR", f::kGetLastError},
      {"RESET_DEBUG_INIT", f::kResetDebugInit},
      {"COMM_REGISTER", f::kCommRegister},
      {"COMM_DEREGISTER", f::kCommDeregister},
      {"COMM_WINDOW_REGISTER", f::kCommWindowRegister},
      {"COMM_WINDOW_DEREGISTER", f::kCommWindowDeregister},
      {"MEM_ALLOC", f::kMemAlloc},
      {"MEM_FREE", f::kMemFree},
      {"RED_OP_CREATE_PRE_MUL_SUM", f::kRedOpCreatePreMulSum},
      {"RED_OP_DESTROY", f::kRedOpDestroy},
      {"COMM_GET_UNIQUE_ID", f::kCommGetUniqueId},
      {"COMM_GROW", f::kCommGrow},
      {"ALL_REDUCE_CONFIG", f::kAllReduceConfig},
      {"BROADCAST_CONFIG", f::kBroadcastConfig},
      {"REDUCE_CONFIG", f::kReduceConfig},
      {"ALL_GATHER_CONFIG", f::kAllGatherConfig},
      {"REDUCE_SCATTER_CONFIG", f::kReduceScatterConfig},
      {"ALL_TO_ALL_CONFIG", f::kAllToAllConfig},
      {"GATHER_CONFIG", f::kGatherConfig},
      {"SCATTER_CONFIG", f::kScatterConfig},
      {"PUT_SIGNAL", f::kPutSignal},
      {"SIGNAL", f::kSignal},
      {"WAIT_SIGNAL", f::kWaitSignal},
      {"COMM_SUSPEND", f::kCommSuspend},
      {"COMM_RESUME", f::kCommResume},
      {"COMM_MEM_STATS", f::kCommMemStats},
      {"WIN_GET_USER_PTR", f::kWinGetUserPtr},
      {"SET_ENCRYPTION", f::kSetEncryption},
      {"COMM_QUERY_PROPERTIES", f::kCommQueryProperties},
      {"DEV_COMM_CREATE", f::kDevCommCreate},
      {"DEV_COMM_DESTROY", f::kDevCommDestroy},
      {"GET_LSA_MULTIMEM_DEVICE_POINTER", f::kGetLsaMultimemDevicePointer},
      {"GET_MULTIMEM_DEVICE_POINTER", f::kGetMultimemDevicePointer},
      {"GET_LSA_DEVICE_POINTER", f::kGetLsaDevicePointer},
      {"GET_PEER_DEVICE_POINTER", f::kGetPeerDevicePointer},
  };
  for (const Pair& p : pairs) {
    INFO(p.name);
    const auto* v = e->FindValueByName(p.name);
    REQUIRE(v != nullptr);
    CHECK(static_cast<uint32_t>(v->number()) == p.value);
  }
  CHECK(static_cast<size_t>(e->value_count()) == std::size(pairs) + 1);  // + CALL_UNKNOWN
}

TEST_CASE("what the hand encoder writes, libprotobuf parses field for field", "[format]") {
  uint8_t buf[512];
  ncclwatch::wire::WireWriter w(buf, sizeof(buf));
  w.Varint(f::record::kT, 123456789012345ull);
  w.Varint(f::record::kThread, 3);
  const size_t body = w.BeginMessage(f::record::kCollective);
  uint8_t* result = w.Fixed32(f::collective::kResult, NCCLWATCH_RESULT_PENDING);
  w.Fixed64(f::collective::kComm, 0x3fa9c1deadbeef01ull);
  w.Varint(f::collective::kSeq, 23);
  w.Varint(f::collective::kCall, f::kBroadcast);
  w.Varint(f::collective::kCount, 1024);
  w.Sint(f::collective::kDatatype, 7);
  w.Sint(f::collective::kRoot, 0);
  w.Fixed64(f::collective::kStream, 0x7f00aa00ull);
  w.Varint(f::collective::kGroup, 5);
  w.Sint(f::collective::kRank, -1);
  w.EndMessage(body);
  REQUIRE(w.ok());
  REQUIRE(result != nullptr);
  const int32_t done = 0;
  std::memcpy(result, &done, 4);  // the result, filled in after the call

  pb::Record r;
  REQUIRE(r.ParseFromArray(buf, static_cast<int>(w.size())));
  CHECK(r.t() == 123456789012345ull);
  CHECK(r.thread() == 3);
  REQUIRE(r.body_case() == pb::Record::kCollective);
  const pb::Collective& c = r.collective();
  CHECK(c.result() == 0);
  CHECK(c.comm() == 0x3fa9c1deadbeef01ull);
  CHECK(c.seq() == 23);
  CHECK(c.call() == pb::BROADCAST);
  CHECK(c.count() == 1024);
  CHECK(c.datatype() == 7);
  CHECK(c.has_root());
  CHECK(c.root() == 0);
  CHECK_FALSE(c.has_redop());
  CHECK(c.stream() == 0x7f00aa00ull);
  CHECK(c.group() == 5);
  CHECK(c.rank() == -1);
}

TEST_CASE("the hand encoder stops cleanly when the buffer is full", "[format]") {
  uint8_t buf[16];
  ncclwatch::wire::WireWriter w(buf, sizeof(buf));
  const size_t m = w.BeginMessage(20);
  w.String(1, "a string far longer than sixteen bytes");
  w.EndMessage(m);
  CHECK_FALSE(w.ok());
  CHECK(w.size() <= sizeof(buf));
  uint8_t big[40000];
  ncclwatch::wire::WireWriter b(big, sizeof(big));
  const size_t n = b.BeginMessage(20);
  std::string s(20000, 'x');
  b.String(1, s.c_str());
  b.EndMessage(n);
  CHECK_FALSE(b.ok());  // nested messages are limited to 16383 bytes
}

TEST_CASE("the CudaCall and P2P-path constants are trace.proto's", "[format]") {
  namespace c = f::cuda_call;
  auto number = [](const google::protobuf::Descriptor* d, const char* field) {
    const google::protobuf::FieldDescriptor* fd = d->FindFieldByName(field);
    INFO(d->name() << "." << field);
    REQUIRE(fd != nullptr);
    return static_cast<uint32_t>(fd->number());
  };
  const auto* rec = pb::Record::descriptor();
  CHECK(number(rec, "cuda_call") == f::record::kCudaCall);
  const auto* cc = pb::CudaCall::descriptor();
  const struct {
    const char* name;
    uint32_t value;
  } fields[] = {{"function", c::kFunction},
                {"result", c::kResult},
                {"via", c::kVia},
                {"device", c::kDevice},
                {"peer", c::kPeer},
                {"size", c::kSize},
                {"ptr", c::kPtr},
                {"handle", c::kHandle},
                {"handle_type", c::kHandleType},
                {"flags", c::kFlags},
                {"fd", c::kFd},
                {"can_access", c::kCanAccess},
                {"err", c::kErr},
                {"in_call", c::kInCall},
                {"from_nccl", c::kFromNccl},
                {"caller", c::kCaller},
                {"num_devices", c::kNumDevices},
                {"access_flags", c::kAccessFlags}};
  for (const auto& x : fields) {
    INFO(x.name);
    CHECK(number(cc, x.name) == x.value);
  }
  CHECK(static_cast<uint32_t>(pb::CudaCall::RUNTIME_EXPORT) == c::kRuntimeExport);
  CHECK(static_cast<uint32_t>(pb::CudaCall::GET_PROC_ADDRESS) == c::kGetProcAddress);
  CHECK(static_cast<uint32_t>(pb::CudaCall::DRIVER_ENTRY_POINT) == c::kDriverEntryPoint);
  CHECK(static_cast<uint32_t>(pb::CudaCall::DLSYM) == c::kDlsym);
  const struct {
    const char* name;
    uint32_t value;
  } functions[] = {{"CU_IPC_GET_MEM_HANDLE", f::kCuIpcGetMemHandle},
                   {"CU_IPC_OPEN_MEM_HANDLE", f::kCuIpcOpenMemHandle},
                   {"CU_IPC_CLOSE_MEM_HANDLE", f::kCuIpcCloseMemHandle},
                   {"CU_IPC_GET_EVENT_HANDLE", f::kCuIpcGetEventHandle},
                   {"CU_IPC_OPEN_EVENT_HANDLE", f::kCuIpcOpenEventHandle},
                   {"CU_MEM_CREATE", f::kCuMemCreate},
                   {"CU_MEM_EXPORT_TO_SHAREABLE_HANDLE", f::kCuMemExportToShareableHandle},
                   {"CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE", f::kCuMemImportFromShareableHandle},
                   {"CU_MEM_MAP", f::kCuMemMap},
                   {"CU_MEM_SET_ACCESS", f::kCuMemSetAccess},
                   {"CU_MEM_RELEASE", f::kCuMemRelease},
                   {"CU_MEM_ADDRESS_RESERVE", f::kCuMemAddressReserve},
                   {"CU_MULTICAST_CREATE", f::kCuMulticastCreate},
                   {"CU_MULTICAST_ADD_DEVICE", f::kCuMulticastAddDevice},
                   {"CU_MULTICAST_BIND_MEM", f::kCuMulticastBindMem},
                   {"CU_CTX_ENABLE_PEER_ACCESS", f::kCuCtxEnablePeerAccess},
                   {"CU_DEVICE_CAN_ACCESS_PEER", f::kCuDeviceCanAccessPeer},
                   {"CUDA_IPC_GET_MEM_HANDLE", f::kCudaIpcGetMemHandle},
                   {"CUDA_IPC_OPEN_MEM_HANDLE", f::kCudaIpcOpenMemHandle},
                   {"CUDA_IPC_CLOSE_MEM_HANDLE", f::kCudaIpcCloseMemHandle},
                   {"CUDA_IPC_GET_EVENT_HANDLE", f::kCudaIpcGetEventHandle},
                   {"CUDA_IPC_OPEN_EVENT_HANDLE", f::kCudaIpcOpenEventHandle},
                   {"CUDA_DEVICE_ENABLE_PEER_ACCESS", f::kCudaDeviceEnablePeerAccess},
                   {"CUDA_DEVICE_CAN_ACCESS_PEER", f::kCudaDeviceCanAccessPeer}};
  for (const auto& x : functions) {
    INFO(x.name);
    const auto* v = pb::CudaFunction_descriptor()->FindValueByName(x.name);
    REQUIRE(v != nullptr);
    CHECK(static_cast<uint32_t>(v->number()) == x.value);
  }
  const auto* iv = pb::Inventory::descriptor();
  CHECK(number(iv, "gpus") == f::inventory::kGpus);
  CHECK(number(iv, "iommu_enabled") == f::inventory::kIommuEnabled);
  CHECK(number(iv, "nvswitches") == f::inventory::kNvswitches);
  const auto* g = pb::Inventory::Gpu::descriptor();
  CHECK(number(g, "bdf") == f::inventory::gpu::kBdf);
  CHECK(number(g, "iommu_group") == f::inventory::gpu::kIommuGroup);
  CHECK(number(g, "bridges") == f::inventory::gpu::kBridges);
  const auto* b = pb::Inventory::PciBridge::descriptor();
  CHECK(number(b, "bdf") == f::inventory::pci_bridge::kBdf);
  CHECK(number(b, "acs_ctrl") == f::inventory::pci_bridge::kAcsCtrl);
}

TEST_CASE("NcclNotSeen: the shim's field numbers and reasons are trace.proto's", "[format]") {
  const google::protobuf::FieldDescriptor* body =
      pb::Record::descriptor()->FindFieldByName("nccl_not_seen");
  REQUIRE(body != nullptr);
  CHECK(static_cast<uint32_t>(body->number()) == f::record::kNcclNotSeen);
  const auto* d = pb::NcclNotSeen::descriptor();
  CHECK(static_cast<uint32_t>(d->FindFieldByName("reason")->number()) == f::nccl_not_seen::kReason);
  CHECK(static_cast<uint32_t>(d->FindFieldByName("path")->number()) == f::nccl_not_seen::kPath);
  CHECK(static_cast<uint32_t>(d->FindFieldByName("calls_seen")->number()) ==
        f::nccl_not_seen::kCallsSeen);
  const auto* reason = pb::NcclNotSeen::Reason_descriptor();
  CHECK(static_cast<uint32_t>(reason->FindValueByName("LINKED_IN")->number()) ==
        f::nccl_not_seen::kLinkedIn);
  CHECK(static_cast<uint32_t>(reason->FindValueByName("DEEPBIND")->number()) ==
        f::nccl_not_seen::kDeepbind);
  CHECK(static_cast<uint32_t>(reason->FindValueByName("SECOND_LIBRARY")->number()) ==
        f::nccl_not_seen::kSecondLibrary);
  CHECK(static_cast<uint32_t>(reason->FindValueByName("SLOTS_FULL")->number()) ==
        f::nccl_not_seen::kSlotsFull);
  CHECK(static_cast<uint32_t>(reason->FindValueByName("ACTIVE_UNSEEN")->number()) ==
        f::nccl_not_seen::kActiveUnseen);
}
