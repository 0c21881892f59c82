// The message catalogue: what NCCL, the frameworks around it (PyTorch's
// c10d, DDP and elastic launcher, JAX/XLA, vLLM, DeepSpeed, Megatron-core,
// SGLang) and the loader print when a distributed job breaks, as one table
// of data. Each message has a stable id, the pattern that recognises it,
// where and since when it is printed, whether it belongs to NCCL's
// initialisation or to a running job, and the cause it names. Each cause has
// the subsystem init forensics files it under, and the fix.
//
//     text ──FindMessage──> CatalogueMessage{id, phase, cause, meaning}
//                                                │
//                                                └──CauseOf──> MessageCause{id, subsystem, fix}
//
// It is knowledge about NCCL and the frameworks, below everything that reads
// it: the log reader (logs/nccl_log.cc) finds the messages in a line, init
// forensics (analysis/init_failure.cc) classifies a rank's texts by the
// messages they hold (network, shm, bootstrap, gpu, version, ib, fabric,
// p2p, cuda and every other subsystem named here), explain
// (analysis/log_diagnosis.cc) turns every message it finds into the finding
// its cause gives (FindingKindOf: the analyses decide, the catalogue names
// no finding), and the reports (report/init_text.cc, report/log_text.cc)
// take their meanings and fixes from it, so a message is described once.
//
// The texts were read in NCCL's source history (2.4 to 2.31) and libraries
// (2.31.2 to 2.32.6), PyTorch's (torch/csrc/distributed/c10d/,
// torch/nn/parallel/, torch/distributed/), JAX/XLA's
// (xla/tsl/distributed_runtime/coordination/, xla/pjrt/distributed/) and the
// PyPI releases of DeepSpeed, Megatron-core and SGLang
// (scripts/list-python-messages.py), and are matched, not copied: the
// meanings and fixes are ours. tests/data/logs/ holds a line of real text for
// every message, and tests/data/nccl_warns.tsv every WARN format of NCCL 2.4
// to 2.32 (from scripts/extract-nccl-warns.py), each of which a message here
// must name with its subsystem (nccl_warns_test.cc), and
// tests/data/torch_messages.tsv PyTorch 2.0-2.15's distributed messages
// (scripts/extract-torch-messages.py), each of which explain must recognise
// with its subsystem's finding (torch_messages_test.cc). PyTorch's messages
// are matched by the words of the source that prints them, after the specific
// ones; those whose words are common (a rank, a backend, a group) only in a
// line that reads as an error (error_only).
//
// Each message has its subsystem (`area`: the part of NCCL or of the
// framework that prints it); most of NCCL's WARN messages are matched by the
// words of their subsystem, after the specific messages, and only in NCCL's
// own lines (`nccl_only`): "Invalid handle" in a program's traceback is not
// NCCL's.
//
// Thread-safety: the table is constant; FindMessage may be called from any
// thread (its matcher is built once, thread-safely).

#ifndef NCCLWATCH_DECODER_KNOWLEDGE_MESSAGE_CATALOGUE_H_
#define NCCLWATCH_DECODER_KNOWLEDGE_MESSAGE_CATALOGUE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "knowledge/area.h"

namespace ncclwatch::decoder {

// When a message is printed.
enum class MessagePhase {
  kInit,     // while a communicator (or the framework's rendezvous) is being set up
  kRuntime,  // under a running job: never evidence of a failed init
  kAny,
};

// The causes the catalogue's messages name, in the table's order (kCauses in
// message_catalogue.cc). Which finding each gives is the analyses' call
// (analysis/log_diagnosis.h, FindingKindOf).
enum class CatalogueCause {
  kNetwork,
  kBootstrap,
  kShm,
  kWorldSize,
  kGpu,
  kVersion,
  kVersionSkew,
  kDriverOld,
  kDriver,
  kIb,
  kIbMemlock,
  kFabric,
  kP2p,
  kGpuFailed,
  kGpuOom,
  kHostOom,
  kKernel,
  kCuda,
  kNetRuntime,
  kPeerLost,
  kRendezvous,
  kDdpUnused,
  kDdpReadyTwice,
  kDdpModel,
  kSizeMismatch,
  kTorchMismatch,
  kUneven,
  kTeardown,
  kTeardownRisk,
  kWatchdog,
  kUsage,
  kConfig,
  kTopology,
  kPlugin,
  kSystem,
  kSocket,
  kProxy,
  kInternal,
  kCollnet,
  kGdr,
  kNvml,
  kDeviceApi,
  kJaxTaskLost,
  kJaxLeaderLost,
  kJaxRendezvous,
  kJaxBarrier,
  kC10dUsage,
  kTorchNccl,
  kTorchBarrier,
  kDdpMisc,
  kLibrary,
  kProcessKilled,
  kDeepspeedInit,
  kModelParallel,
  kGpuBusy,
  kLoader,
  kNetNotice,
  kSettingIgnored,  // NCCL ignored a setting and went on with its default (a warning)
};

// What a message names: its cause, whether that is a failure of NCCL's
// initialisation (init forensics explains it from a rank's evidence), the
// subsystem init forensics reports it under (kNone when it is never an init
// cause), and what to do.
struct MessageCause {
  CatalogueCause id;
  const char* name;  // "network", "ib_memlock": stable, for tests and lookups by name
  bool init_failure;
  Area subsystem;
  const char* fix;
};

struct CatalogueMessage {
  const char* id;       // stable; the JSON's "message"
  const char* pattern;  // RE2, unanchored, matched against the message text
  const char* source;   // who prints it, and in which releases (where it was read)
  MessagePhase phase;
  CatalogueCause cause;
  bool error_only;      // the words also appear in healthy INFO lines: only a WARN line
                        // or a line with an error word counts
  const char* meaning;  // what happened, in our words, to follow the ranks' noun
  const char* address;  // RE2 with one or two groups (host, port) for the address it
                        // names; nullptr when none
  // The part of NCCL (or of the framework) that prints it (net/ib, proxy,
  // topology, c10d, jax/coordination); kNone: its cause's subsystem.
  Area area = Area::kNone;
  // Words only NCCL's own WARN text gives a meaning to ("Invalid handle",
  // "Could not find pool"): matched in NCCL's lines (and in the texts of
  // init forensics, which are NCCL's), never in a framework's or a program's.
  bool nccl_only = false;
};

// The first message of the table (in table order: specific before general)
// whose pattern the text holds, or nullptr. Linear in the text.
const CatalogueMessage* FindMessage(absl::string_view text);
// The same for a line that is not NCCL's own (a framework's, the launcher's,
// the program's): nccl_only messages are not looked for in it.
const CatalogueMessage* FindMessageInOtherText(absl::string_view text);
// Every message the text holds, in table order: for a reader that looks for
// one cause among several messages a line may hold (init forensics).
std::vector<const CatalogueMessage*> FindMessages(absl::string_view text);
// The message's subsystem: its area, else its cause's subsystem (kNone for
// neither).
Area MessageArea(const CatalogueMessage& m);
const CatalogueMessage* MessageById(absl::string_view id);
const MessageCause& CauseOf(const CatalogueMessage& m);
const MessageCause& CauseOf(CatalogueCause cause);
const MessageCause* CauseNamed(absl::string_view name);
// "host:port" ("[v6]:port") or the one group that a message's address pattern finds, ""
// when none.
std::string MessageAddress(const CatalogueMessage& m, absl::string_view text);
// Whether the message names a risk or an event NCCL goes on after, not a
// failure (a job that exited without destroy_process_group, an InfiniBand
// port's GID table change): explain reports it as a warning, never above the
// failure that follows it.
bool WarningOnly(const CatalogueMessage& m);
// Whether a line reads as an error ("error", "failed", "refused", ...):
// for messages whose words healthy INFO lines also use.
bool ErrorWords(absl::string_view text);
// The part of NCCL a source file of its tree is ("transport/net_ib.cc" ->
// net/ib, "misc/socket.cc" -> socket, "graph/topo.cc" -> topology), from
// the location NCCL's WARN lines carry; kNone for a file it does not know.
// Read in NCCL 2.4-2.32's src/.
Area NcclSourceArea(absl::string_view file);
// Every message, for the tests that check each has real text.
const std::vector<CatalogueMessage>& CatalogueMessages();

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_KNOWLEDGE_MESSAGE_CATALOGUE_H_
