#include "report/straggler_text.h"

#include <time.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/arrival_skew.h"
#include "knowledge/nccl_semantics.h"
#include "report/names.h"
#include "summary/summary_format.h"

namespace ncclwatch::decoder {

namespace {

// A span for a reader, rounded: "850 us", "4.8 ms", "21 ms", "1.4 s".
std::string Span(int64_t ns) {
  const double v = static_cast<double>(std::max<int64_t>(ns, 0));
  if (v < 1e6) return absl::StrFormat("%.0f us", v / 1e3);
  if (v < 9.95e6) return absl::StrFormat("%.1f ms", v / 1e6);
  if (v < 999.5e6) return absl::StrFormat("%.0f ms", v / 1e6);
  return absl::StrFormat("%.1f s", v / 1e9);
}

std::string Utc(int64_t ns) {
  const time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  struct tm tm {};
  char when[40] = "an unknown time";
  if (ns > 0 && gmtime_r(&secs, &tm)) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return when;
}

// Where node summaries kept fewer of a rank's collectives than the
// analysis reads (StragglerEvidence::summary_kept): over how many, and how
// to compare as many as the traces hold. GPU times (a slow GPU or link) are
// kept kSummaryGpuTimes per communicator whatever the --window; host
// enqueues, the summaries' window (narrowed past 8,192 members).
std::string SummaryKept(const StragglerFacts& x, bool gpu_times) {
  if (x.summary_kept == 0) return "";
  return absl::StrCat(
      "; compared over the last ", x.summary_kept,
      " collectives of a rank that its node's summary kept, not ", x.window,
      gpu_times ? absl::StrCat(" (a summary keeps a communicator's last ", kSummaryGpuTimes,
                               " GPU times: the traces hold more; read them to compare as many)")
                : std::string(" (the summaries' window was narrower: the traces hold more; read "
                              "them, or summarize again with a larger --window, to compare as "
                              "many)"));
}

// A slow link's words: its communicators' collectives took longer once
// every member had arrived than the others of their kind.
std::string RenderLink(const Finding& f, const StragglerFacts& x) {
  const bool one = x.link_ranks.empty();
  std::string text = absl::StrFormat(
      "%s is slow: %d of %d %ss of communicator %s (%d ranks) took %s longer on median (90th "
      "percentile %s), once every member had reached them, than the usual %s of the %d "
      "communicators of %d ranks",
      one ? absl::StrCat("the link of rank ", x.rank)
          : absl::StrCat("the link between ", LinkRanks(x)),
      x.call_times_last, x.call_compared, CallName(x.call), CommShort(f.comm.value_or(0)),
      x.members, Span(x.median_late_ns), Span(x.p90_late_ns), Span(x.usual_ns), x.kind_comms,
      x.members);
  if (x.times_last != x.call_times_last)
    absl::StrAppend(&text, "; slow in ", x.times_last, " of its ", x.compared, " collectives");
  if (!x.also_comms.empty()) {
    std::vector<std::string> others;
    for (uint64_t c : x.also_comms) others.push_back(CommShort(c));
    absl::StrAppend(&text, "; so are communicator", others.size() > 1 ? "s " : " ",
                    absl::StrJoin(others, ", "), ", and rank ", x.rank,
                    " is the one member they all share");
  } else if (one) {
    absl::StrAppend(&text, "; rank ", x.rank, " is the member its slow communicators share");
  } else {
    absl::StrAppend(&text, "; no other slow communicator tells which of them");
  }
  absl::StrAppend(&text,
                  "; the time is lost after every member has reached them, on every member: "
                  "waiting on data over the link, not on a late host or GPU");
  if (x.began_later) {
    absl::StrAppend(&text, "; it began at collective #", x.began_seq, " (", Utc(x.began_ns), ")");
  } else if (x.window_start) {
    absl::StrAppend(&text, "; slow in every collective compared, from #", x.first_seq,
                    " (earlier ones were not kept)");
  }
  absl::StrAppend(&text, SummaryKept(x, /*gpu_times=*/true));
  if (x.worsening) {
    absl::StrAppend(&text, ", and it is getting worse: ", Span(x.early_late_ns),
                    " longer at first, ", Span(x.recent_late_ns), " lately");
  }
  return text;
}

}  // namespace

std::string StragglerLate(const StragglerFacts& x) { return Span(x.median_late_ns); }

std::string LinkRanks(const StragglerFacts& x) {
  if (x.link_ranks.empty()) return absl::StrCat("rank ", x.rank);
  std::vector<std::string> ranks;
  for (int r : x.link_ranks) ranks.push_back(absl::StrCat(r));
  const std::string last = ranks.back();
  ranks.pop_back();
  return absl::StrCat("ranks ", absl::StrJoin(ranks, ", "), " and ", last);
}

std::string RenderStraggler(const Finding& f, const StragglerFacts& x) {
  if (x.cause == StragglerFacts::Cause::kLink) return RenderLink(f, x);
  const bool gpu = x.cause == StragglerFacts::Cause::kGpu;
  std::string text = absl::StrFormat(
      "rank %d %s last in %d of %d %ss of communicator %s (%d ranks compared), %s %s on median "
      "(90th percentile %s)",
      x.rank, gpu ? "reached the GPU" : "enqueued", x.call_times_last, x.call_compared,
      CallName(x.call), CommShort(f.comm.value_or(0)), x.members, Span(x.median_late_ns),
      gpu ? "late" : "after the others", Span(x.p90_late_ns));
  if (x.times_last != x.call_times_last)
    absl::StrAppend(&text, "; last in ", x.times_last, " of its ", x.compared, " collectives");
  if (x.median_interval_ns > 0) {
    absl::StrAppend(
        &text,
        absl::StrFormat(
            "; its collectives come every %s: the others wait %d%% of that for it",
            Span(x.median_interval_ns),
            static_cast<int>(100 * x.median_late_ns / std::max<int64_t>(x.median_interval_ns, 1))));
  }
  if (!gpu) {
    absl::StrAppend(&text, "; its host issues them late (its data loader, CPU or Python)");
  } else if (x.host_late_ns < ArrivalSkew::kMinGapNs) {
    absl::StrAppend(&text, "; its host enqueued on time (", x.host_on_time, " of ",
                    x.call_times_last == x.times_last ? x.call_times_last : x.times_last,
                    "): its GPU reaches them late (its earlier work runs slow)");
  } else {
    absl::StrAppend(&text, "; its host enqueued ", Span(x.host_late_ns),
                    " late on median, less than its GPU came late: its GPU reaches them late (its "
                    "earlier work runs slow) and its host waits on it");
  }
  if (x.began_later) {
    absl::StrAppend(&text, "; it began at collective #", x.began_seq, " (", Utc(x.began_ns), ")");
  } else if (x.window_start) {
    absl::StrAppend(&text, "; it straggled in every collective compared, from #", x.first_seq,
                    " (earlier ones were not kept)");
  } else {
    absl::StrAppend(&text, "; it straggled from the communicator's first collective");
  }
  if (x.window > 0 && x.window < ArrivalSkew::kWindow) {
    absl::StrAppend(&text, "; compared over each rank's last ", x.window, " collectives, not ",
                    ArrivalSkew::kWindow, " (", x.members,
                    " ranks: the analysis keeps fewer per rank past 8,192)");
  }
  absl::StrAppend(&text, SummaryKept(x, gpu));
  if (x.worsening) {
    absl::StrAppend(&text, ", and it is getting worse: ", Span(x.early_late_ns), " late at first, ",
                    Span(x.recent_late_ns), " lately");
  }
  if (!x.also_comms.empty()) {
    std::vector<std::string> others;
    for (uint64_t c : x.also_comms) others.push_back(CommShort(c));
    absl::StrAppend(&text, "; the same in communicator", others.size() > 1 ? "s " : " ",
                    absl::StrJoin(others, ", "));
  }
  if (x.hosts > 1 && x.clocks_aligned) {
    absl::StrAppend(&text, "; its members run on ", x.hosts,
                    " hosts, whose clocks were aligned by the job's own collectives (they finish "
                    "together on every member) to within ",
                    Span(std::max<int64_t>(x.clock_residual_ns, 1000)));
  } else if (x.hosts > 1) {
    absl::StrAppend(&text, "; its members run on ", x.hosts,
                    " hosts, whose clocks were compared as they were (no GPU times to align them "
                    "by: their offset adds to every gap; check NTP/PTP if the gap is under a few "
                    "milliseconds)");
  }
  return text;
}

}  // namespace ncclwatch::decoder
