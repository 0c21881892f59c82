// The words of the completion and liveness findings (never_completed,
// gpu_fault and cuda_error from a trace, nccl_async_error, rank_died and
// rank_frozen by liveness, hang_unexplained, rank_exit_error,
// trace_overwritten, nccl_calls_unseen, killed_while_running) and of where
// a hang is, from their facts (findings/finding.h). finding_text.cc
// dispatches here.

#ifndef NCCLWATCH_DECODER_REPORT_HANG_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_HANG_TEXT_H_

#include <string>

#include "findings/finding.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {

// "startup", "step", "teardown" (the JSON's `phase`).
const char* PhaseName(HangPhase phase);
// "at startup (init, rendezvous or the communicator's first collective)", ...
std::string PhaseText(HangPhase phase);
// A duration in seconds for a reader: "12.0 s".
std::string Seconds(int64_t ns);
// The NCCLWATCH_RING_SIZE value that holds `bytes`: a power of two, "256M".
std::string RingSizeSetting(uint64_t bytes);
// hang_unexplained's words for what a group of ranks was doing.
std::string ActivityText(const HangFacts::Group& g);

void RenderNeverCompleted(const Finding& f, const NeverCompletedFacts& x,
                          const CallSiteNamer& sites, FindingText* t);
void RenderDeviceError(const Finding& f, const DeviceErrorFacts& x, FindingText* t);
void RenderStoppedRank(const Finding& f, const StoppedRankFacts& x, const CallSiteNamer& sites,
                       FindingText* t);
void RenderHang(const Finding& f, const HangFacts& x, FindingText* t);
void RenderKilledWhileRunning(const Finding& f, const KilledWhileRunningFacts& x, FindingText* t);
void RenderExitError(const Finding& f, const ExitErrorFacts& x, FindingText* t);
void RenderBlindSpot(const Finding& f, const BlindSpotFacts& x, FindingText* t);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_HANG_TEXT_H_
