// The field numbers and enum values of trace.proto, for the shim's hand
// encoder (which must not depend on libprotobuf). Freestanding.
//
// tests/unit/trace_format_test.cc checks every constant here against the
// descriptors protoc generates from trace.proto, so the two cannot drift.

#ifndef NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_
#define NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_

#include <stdint.h>

namespace ncclwatch::fields {

// enum Call
enum Call : uint32_t {
  kCallUnknown = 0,
  kAllReduce = 1,
  kBroadcast = 2,
  kBcast = 3,
  kReduce = 4,
  kAllGather = 5,
  kReduceScatter = 6,
  kAllToAll = 7,
  kGather = 8,
  kScatter = 9,
  kSend = 10,
  kRecv = 11,
  kGroupStart = 12,
  kGroupEnd = 13,
  kGroupSimulateEnd = 14,
  kGetUniqueId = 20,
  kCommInitRank = 21,
  kCommInitRankConfig = 22,
  kCommInitAll = 23,
  kCommInitRankScalable = 24,
  kCommSplit = 25,
  kCommShrink = 26,
  kCommFinalize = 30,
  kCommDestroy = 31,
  kCommAbort = 32,
  kCommRevoke = 33,
  kCommGetAsyncError = 40,
  kCommCount = 41,
  kCommCuDevice = 42,
  kCommUserRank = 43,
  kGetVersion = 44,
  kGetErrorString = 45,
  kGetLastError = 46,
  kResetDebugInit = 47,
  kCommRegister = 50,
  kCommDeregister = 51,
  kCommWindowRegister = 52,
  kCommWindowDeregister = 53,
  kMemAlloc = 54,
  kMemFree = 55,
  kRedOpCreatePreMulSum = 56,
  kRedOpDestroy = 57,
};

// The name of a Call: what NCCL calls an operation ("AllReduce", "Send"),
// the entry point's name for the rest ("ncclCommInitRank"); nullptr for a
// value this header does not know. Shared by the shim's stall line and the
// decoder's reports.
constexpr const char* CallName(uint32_t call) {
  switch (call) {
    case kAllReduce:
      return "AllReduce";
    case kBroadcast:
      return "Broadcast";
    case kBcast:
      return "Bcast";
    case kReduce:
      return "Reduce";
    case kAllGather:
      return "AllGather";
    case kReduceScatter:
      return "ReduceScatter";
    case kAllToAll:
      return "AlltoAll";
    case kGather:
      return "Gather";
    case kScatter:
      return "Scatter";
    case kSend:
      return "Send";
    case kRecv:
      return "Recv";
    case kGroupStart:
      return "ncclGroupStart";
    case kGroupEnd:
      return "ncclGroupEnd";
    case kGroupSimulateEnd:
      return "ncclGroupSimulateEnd";
    case kGetUniqueId:
      return "ncclGetUniqueId";
    case kCommInitRank:
      return "ncclCommInitRank";
    case kCommInitRankConfig:
      return "ncclCommInitRankConfig";
    case kCommInitAll:
      return "ncclCommInitAll";
    case kCommInitRankScalable:
      return "ncclCommInitRankScalable";
    case kCommSplit:
      return "ncclCommSplit";
    case kCommShrink:
      return "ncclCommShrink";
    case kCommFinalize:
      return "ncclCommFinalize";
    case kCommDestroy:
      return "ncclCommDestroy";
    case kCommAbort:
      return "ncclCommAbort";
    case kCommRevoke:
      return "ncclCommRevoke";
    case kCommGetAsyncError:
      return "ncclCommGetAsyncError";
    case kCommCount:
      return "ncclCommCount";
    case kCommCuDevice:
      return "ncclCommCuDevice";
    case kCommUserRank:
      return "ncclCommUserRank";
    case kGetVersion:
      return "ncclGetVersion";
    case kGetErrorString:
      return "ncclGetErrorString";
    case kGetLastError:
      return "ncclGetLastError";
    case kResetDebugInit:
      return "ncclResetDebugInit";
    case kCommRegister:
      return "ncclCommRegister";
    case kCommDeregister:
      return "ncclCommDeregister";
    case kCommWindowRegister:
      return "ncclCommWindowRegister";
    case kCommWindowDeregister:
      return "ncclCommWindowDeregister";
    case kMemAlloc:
      return "ncclMemAlloc";
    case kMemFree:
      return "ncclMemFree";
    case kRedOpCreatePreMulSum:
      return "ncclRedOpCreatePreMulSum";
    case kRedOpDestroy:
      return "ncclRedOpDestroy";
    default:
      return nullptr;
  }
}

namespace record {
constexpr uint32_t kT = 1, kThread = 2, kProcessStart = 16, kProcessEnd = 17, kTimeAnchor = 18,
                   kModule = 19, kCommInitBegin = 20, kCommInitEnd = 21, kCommEnd = 22,
                   kCollective = 23, kP2p = 24, kGroup = 25, kApi = 26, kFatalSignal = 27,
                   kSysCall = 28, kNcclError = 29, kInventory = 30, kProgress = 31, kHeartbeat = 32,
                   kStall = 33, kCudaError = 34, kCompletionTracking = 35, kUntracked = 36;
// The highest body field a reader of this header knows.
constexpr uint32_t kLastBody = kUntracked;
}  // namespace record
namespace process_start {
constexpr uint32_t kPid = 1, kHost = 2, kGlobalRank = 3, kRankSource = 4, kWorldSize = 5,
                   kLocalRank = 6, kExe = 7, kJobId = 8, kShimVersion = 9;
}
namespace process_end {
constexpr uint32_t kHow = 1, kExitCode = 2;
constexpr uint32_t kHowExit = 1, kHowUnderscoreExit = 2, kHowExec = 3, kHowExecFailed = 4,
                   kHowQuickExit = 5;
}  // namespace process_end
namespace time_anchor {
constexpr uint32_t kT = 1, kMonotonicNs = 2, kRealtimeNs = 3;
}
namespace module {
constexpr uint32_t kPath = 1, kBase = 2, kStart = 3, kEnd = 4, kBuildId = 5;
}
namespace comm_init_begin {
constexpr uint32_t kComm = 1, kCall = 2, kNranks = 3, kRank = 4, kParent = 5, kColor = 6, kKey = 7,
                   kSplitIndex = 8, kExcluded = 9, kBlocking = 10, kCaller = 11, kDevice = 12,
                   kBusId = 13;
}
namespace comm_init_end {
constexpr uint32_t kComm = 1, kResult = 2, kHandle = 3, kRank = 4, kDevice = 5, kNranks = 6;
}
namespace comm_end {
constexpr uint32_t kComm = 1, kHandle = 2, kCall = 3, kResult = 4, kRank = 5;
}
namespace collective {
constexpr uint32_t kResult = 1, kComm = 2, kSeq = 3, kCall = 4, kCount = 5, kDatatype = 6,
                   kRedop = 7, kRoot = 8, kStream = 9, kSendbuff = 10, kRecvbuff = 11, kGroup = 12,
                   kCaller = 13, kRank = 14;
}
namespace p2p {
constexpr uint32_t kResult = 1, kComm = 2, kSeq = 3, kSend = 4, kPeer = 5, kCount = 6,
                   kDatatype = 7, kStream = 8, kBuff = 9, kGroup = 10, kCaller = 11, kRank = 12;
}
namespace group {
constexpr uint32_t kResult = 1, kCall = 2, kGroup = 3, kDepth = 4, kCaller = 5;
}
namespace api {
constexpr uint32_t kResult = 1, kCall = 2, kComm = 3, kValue = 4, kCaller = 5;
}
namespace fatal_signal {
constexpr uint32_t kSigno = 1, kCode = 2, kAddress = 3, kSenderPid = 4, kDisposition = 5;
}

namespace sys_call {
constexpr uint32_t kKind = 1, kRet = 2, kErr = 3, kFd = 4, kPath = 5, kSize = 6, kOffset = 7,
                   kAddr = 8, kArg = 9, kInCall = 10, kFromNccl = 11, kCaller = 12;
enum Kind : uint32_t {
  kSocket = 1,
  kBind = 2,
  kListen = 3,
  kConnect = 4,
  kAccept = 5,
  kGetifaddrs = 6,
  kSetsockopt = 7,
  kShmOpen = 10,
  kOpen = 11,
  kMkstemp = 12,
  kFallocate = 13,
  kPosixFallocate = 14,
  kFtruncate = 15,
  kMmap = 16,
  kUnlink = 17,
  kDlopen = 18,
  kVerbs = 19,
};
}  // namespace sys_call
namespace nccl_error {
constexpr uint32_t kCall = 1, kResult = 2, kComm = 3, kLastError = 4, kAsync = 5;
}
namespace inventory {
constexpr uint32_t kEnv = 1, kNcclVersion = 2, kNcclPath = 3, kCudaDriverVersion = 4,
                   kCudaRuntimeVersion = 5, kFramework = 6, kFrameworkPath = 7, kInterfaces = 8,
                   kShmKnown = 9, kShmSize = 10, kShmFree = 11, kMemlockSoft = 12,
                   kMemlockHard = 13, kCgroup = 14, kContainer = 15;
// P2P hardware path
constexpr uint32_t kGpus = 16, kIommuEnabled = 17, kNvswitches = 18;
namespace variable {
constexpr uint32_t kName = 1, kValue = 2;
}
namespace pci_bridge {
constexpr uint32_t kBdf = 1, kAcsCtrl = 2;
}
namespace gpu {
constexpr uint32_t kBdf = 1, kIommuGroup = 2, kBridges = 3;
}
namespace interface {
constexpr uint32_t kName = 1, kFlags = 2, kAddr = 3, kPrefixLen = 4;
}
}  // namespace inventory
namespace completion_tracking {
constexpr uint32_t kComm = 1, kMechanism = 2, kWhyNot = 3, kMarkers = 4, kDevice = 5;
constexpr uint32_t kNone = 0, kCudaEvents = 1;
}  // namespace completion_tracking
namespace progress {
constexpr uint32_t kComm = 1, kCollectives = 2, kEnqueuedT = 3, kPending = 4, kIssued = 5;
}
namespace heartbeat {
constexpr uint32_t kBeat = 1, kIntervalMs = 2;
}
namespace stall {
constexpr uint32_t kComm = 1, kCall = 2, kSeq = 3, kPeer = 4, kSend = 5, kWaitedMs = 6,
                   kCompleted = 7, kPending = 8, kGroupOps = 9, kRank = 10, kNranks = 11;
}
namespace cuda_error {
constexpr uint32_t kComm = 1, kResult = 2, kName = 3, kText = 4, kDevice = 5, kWhere = 6, kSeq = 7;
constexpr uint32_t kWhereEventQuery = 1, kWhereEventRecord = 2;
}  // namespace cuda_error
namespace untracked {
constexpr uint32_t kComm = 1, kCall = 2, kSeq = 3, kReason = 4;
constexpr uint32_t kCaptured = 1, kInProgress = 2;
}  // namespace untracked

// Record.cuda_call (CudaCall) and enum CudaFunction.
namespace record {
constexpr uint32_t kCudaCall = 40;
}
namespace cuda_call {
constexpr uint32_t kFunction = 1, kResult = 2, kVia = 3, kDevice = 4, kPeer = 5, kSize = 6,
                   kPtr = 7, kHandle = 8, kHandleType = 9, kFlags = 10, kFd = 11, kCanAccess = 12,
                   kErr = 13, kInCall = 14, kFromNccl = 15, kCaller = 16, kNumDevices = 17,
                   kAccessFlags = 18;
enum Via : uint32_t { kRuntimeExport = 1, kGetProcAddress = 2, kDriverEntryPoint = 3, kDlsym = 4 };
}  // namespace cuda_call
enum CudaFunction : uint32_t {
  kCuIpcGetMemHandle = 1,
  kCuIpcOpenMemHandle = 2,
  kCuIpcCloseMemHandle = 3,
  kCuIpcGetEventHandle = 4,
  kCuIpcOpenEventHandle = 5,
  kCuMemCreate = 10,
  kCuMemExportToShareableHandle = 11,
  kCuMemImportFromShareableHandle = 12,
  kCuMemMap = 13,
  kCuMemSetAccess = 14,
  kCuMemRelease = 15,
  kCuMemAddressReserve = 16,
  kCuMulticastCreate = 20,
  kCuMulticastAddDevice = 21,
  kCuMulticastBindMem = 22,
  kCuCtxEnablePeerAccess = 30,
  kCuDeviceCanAccessPeer = 31,
  kCudaIpcGetMemHandle = 40,
  kCudaIpcOpenMemHandle = 41,
  kCudaIpcCloseMemHandle = 42,
  kCudaIpcGetEventHandle = 43,
  kCudaIpcOpenEventHandle = 44,
  kCudaDeviceEnablePeerAccess = 50,
  kCudaDeviceCanAccessPeer = 51,
};
// Record bodies 50-54: what the shim knows it cannot see.
namespace record {
constexpr uint32_t kNcclNotSeen = 50;
}
namespace nccl_not_seen {
constexpr uint32_t kReason = 1, kPath = 2, kCallsSeen = 3;
constexpr uint32_t kLinkedIn = 1, kDeepBind = 2, kSecondLibrary = 3, kSlotsFull = 4,
                   kActiveUnseen = 5;
}  // namespace nccl_not_seen

// Before and beside NCCL (70-79).
namespace record {
constexpr uint32_t kSocketActivity = 70;
}
namespace process_start {
constexpr uint32_t kTracedFrom = 70;
enum TracedFrom : uint32_t { kFirstCall = 0, kNcclLoaded = 1, kNotSeen = 2 };
}  // namespace process_start
namespace inventory {
constexpr uint32_t kAtLoad = 70;
}
namespace socket_activity {
constexpr uint32_t kKind = 1, kAddr = 2, kErr = 3, kDeferred = 4, kCount = 5, kFirstT = 6,
                   kLastT = 7, kCaller = 8;
enum Kind : uint32_t { kBind = 1, kListen = 2, kConnect = 3, kAccept = 4 };
}  // namespace socket_activity

}  // namespace ncclwatch::fields

#endif  // NCCLWATCH_PROTO_NCCLWATCH_TRACE_FIELDS_H_
