#include "report/status_report.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "knowledge/nccl_semantics.h"
#include "report/names.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {
namespace {

// A live process whose watcher has not beaten for this many intervals (and
// at least kMinSilenceNs) is frozen or was killed.
constexpr int64_t kSilentBeats = 3;
constexpr int64_t kMinSilenceNs = 5'000'000'000;

std::string Ago(int64_t ns) {
  if (ns < 0) return "-";
  if (ns < 1'000'000'000) return absl::StrFormat("%.1f s ago", ns / 1e9);
  if (ns < 120'000'000'000) return absl::StrFormat("%.0f s ago", ns / 1e9);
  return absl::StrFormat("%.0f min ago", ns / 60e9);
}

// A lateness, rounded: "850 us", "4.8 ms", "21 ms".
std::string Late(int64_t ns) {
  const double v = static_cast<double>(std::max<int64_t>(ns, 0));
  if (v < 1e6) return absl::StrFormat("%.0f us", v / 1e3);
  if (v < 9.95e6) return absl::StrFormat("%.1f ms", v / 1e6);
  if (v < 999.5e6) return absl::StrFormat("%.0f ms", v / 1e6);
  return absl::StrFormat("%.1f s", v / 1e9);
}

std::string Seq(int64_t seq) { return seq < 0 ? "-" : "#" + std::to_string(seq); }

// A sequence number or count from a trace, as a signed number that cannot
// overflow when 1 is added or taken (a crafted trace may hold 2^64-1).
int64_t Bounded(uint64_t n) {
  return n > static_cast<uint64_t>(INT64_MAX / 2) ? INT64_MAX / 2 : static_cast<int64_t>(n);
}

}  // namespace

JobStatusBuilder::JobStatusBuilder(int64_t now_ns, int64_t stuck_after_ns)
    : stuck_after_ns_(stuck_after_ns) {
  status_.now_ns = now_ns;
}

void JobStatusBuilder::AddUnreadable(const std::string& path, const std::string& why) {
  status_.unreadable.push_back(path + ": " + why);
}

void JobStatusBuilder::AddNotSearched(const std::string& why) {
  status_.not_searched.push_back(why);
}

void JobStatusBuilder::AddProcess(const ProcessTrace& t) {
  arrivals_.AddProcess(static_cast<int>(status_.processes), t);
  gpu_arrivals_.AddProcess(static_cast<int>(status_.processes), t);
  clocks_.AddProcess(static_cast<int>(status_.processes), t);
  links_.AddProcess(static_cast<int>(status_.processes), t);
  ++status_.processes;
  const int64_t now = status_.now_ns;
  // Nanoseconds from `tick` to now, 0 when in the future; 128 bits, since a
  // crafted trace's times may lie anywhere.
  auto since = [&](uint64_t tick) -> int64_t {
    const __int128 d = static_cast<__int128>(now) - t.RealtimeNs(tick);
    return d < 0 ? 0 : d > INT64_MAX ? INT64_MAX : static_cast<int64_t>(d);
  };

  std::string ended;
  if (t.end) {
    ended = "exited (code " + std::to_string(t.end->exit_code) + ")";
  } else if (!t.signals.empty()) {
    ended = "died of " + SignalName(t.signals.back().signo);
  }
  int64_t since_beat = -1;
  bool not_beating = false;
  if (t.liveness.beats > 0) {
    since_beat = since(t.liveness.last_t);
    const int64_t interval = static_cast<int64_t>(t.liveness.interval_ms) * 1'000'000;
    not_beating = ended.empty() && since_beat > std::max(kSilentBeats * interval, kMinSilenceNs);
  }

  StatusProcess added;
  added.id = {t.host, t.pid, t.created_realtime_ns, t.pid_namespace};
  added.path = t.path;
  added.from_summary = t.FromNodeSummary();
  added.has_streams = !t.streams.empty();
  added.exit_ok = t.end && t.end->exit_code == 0;
  added.ended = ended;
  added.not_beating = not_beating;
  // Two intervals without a beat (or no heartbeat to tell by).
  added.beats_stale = t.liveness.beats == 0 ||
                      since_beat > 2 * static_cast<int64_t>(t.liveness.interval_ms) * 1'000'000;
  processes_.push_back(std::move(added));

  // Per communicator, once: its latest Progress and its stall reports.
  std::map<uint64_t, const ProgressEvent*> latest;
  for (const ProgressEvent& p : t.progress) {
    const ProgressEvent*& l = latest[p.comm];
    if (l == nullptr || p.order > l->order) l = &p;
  }
  std::map<uint64_t, std::vector<const StallEvent*>> stalls;
  for (const StallEvent& st : t.stalls) stalls[st.comm].push_back(&st);
  // The last asynchronous NCCL or CUDA error per communicator (0: none named).
  std::map<uint64_t, std::string> errors;
  for (const NcclErrorEvent& e : t.errors)
    if (e.async)
      errors[e.comm] = "async " + ResultName(e.result) + (e.text.empty() ? "" : ": " + e.text);
  for (const CudaErrorEvent& e : t.cuda_errors)
    errors[e.comm] = e.name + (e.text.empty() ? "" : ": " + e.text);

  for (const CommStream& s : t.streams) {
    RankStatus r;
    r.comm_rank = s.rank;
    r.global_rank = t.DisplayRank();
    r.host = t.host;
    r.pid = t.pid;
    r.process = processes_.size() - 1;
    r.ended = ended;
    r.since_beat_ns = since_beat;
    r.not_beating = not_beating;
    r.job = t.job_id;
    r.overwritten_slots = t.stats.ring_overwritten;
    for (const NcclErrorEvent& e : t.errors)
      r.async_errors += e.async && (e.comm == s.comm || e.comm == 0);
    for (const CudaErrorEvent& e : t.cuda_errors) r.async_errors += e.comm == s.comm || e.comm == 0;
    const CommMembership* m = s.membership >= 0 ? &t.comms[s.membership] : nullptr;
    if (m && m->end_call != 0 && r.ended.empty()) r.ended = "left (" + CallName(m->end_call) + ")";

    uint64_t last_activity_t = m ? m->init_t : 0;
    if (!s.collectives.empty()) {
      const CollectiveEvent& c = t.collectives[s.collectives.back()];
      r.entered = Bounded(c.seq);
      last_activity_t = std::max(last_activity_t, c.t);
    }
    // The latest Progress of this communicator, by time.
    const auto latest_it = latest.find(s.comm);
    const ProgressEvent* progress = latest_it == latest.end() ? nullptr : latest_it->second;
    const CompletionTrackingEvent* tracking = t.Tracking(s.comm);
    r.tracked = tracking != nullptr && tracking->Tracked();
    if (progress) {
      r.completed = Bounded(progress->collectives) - 1;
      r.pending_ops = progress->pending;
    }
    // What is pending: collectives entered and not completed (or, with no
    // progress record yet, everything entered since tracking began).
    // What is pending: collectives entered and not completed, or other
    // operations (sends, receives) the last Progress counts.
    const bool collectives_pending = r.tracked && r.entered > r.completed;
    uint64_t pending_since_t = progress ? progress->t : last_activity_t;
    if (collectives_pending) {
      const uint64_t first = static_cast<uint64_t>(r.completed + 1);
      for (uint32_t i : s.collectives) {
        if (t.collectives[i].seq != first) continue;
        r.pending = CallName(t.collectives[i].call) + " #" + std::to_string(first);
        pending_since_t = std::max(pending_since_t, t.collectives[i].t);
        break;
      }
      if (r.pending.empty()) r.pending = "collective #" + std::to_string(first);
    } else if (r.tracked && r.pending_ops > 0) {
      r.pending = std::to_string(r.pending_ops) + " operation(s)";
    }
    if (progress) r.since_progress_ns = since(progress->t);
    const int64_t pending_for = r.pending.empty() ? -1 : since(pending_since_t);
    r.stalls = stalls[s.comm].size();
    for (const StallEvent* stall : stalls[s.comm]) {
      const StallEvent& st = *stall;
      // A stall of the work still pending: nothing completed since it.
      if (!r.pending.empty() && Bounded(st.completed) >= r.completed + 1) {
        r.stalled = true;
        r.stall_waited_ms = std::max(r.stall_waited_ms, st.waited_ms);
      }
    }
    if (auto it = errors.find(s.comm); it != errors.end())
      r.error = it->second;
    else if (auto any = errors.find(0); any != errors.end())
      r.error = any->second;
    r.stuck =
        r.ended.empty() && (!r.error.empty() || r.not_beating ||
                            (!r.pending.empty() && (r.stalled || pending_for >= stuck_after_ns_)));

    auto it = std::find_if(status_.comms.begin(), status_.comms.end(),
                           [&](const CommStatus& c) { return c.comm == s.comm; });
    if (it == status_.comms.end()) {
      status_.comms.push_back({s.comm, m ? m->nranks : -1, {}});
      it = status_.comms.end() - 1;
    }
    if (it->nranks < 0 && m) it->nranks = m->nranks;
    it->ranks.push_back(std::move(r));
  }
}

JobStatus JobStatusBuilder::Finish(const LivenessObservation& seen) {
  // What this host sees of its processes whose traces hold no end: gone
  // (or a zombie) is killed, stopped is frozen, whatever the heartbeat says.
  std::vector<const ProcessObservation*> observed(processes_.size(), nullptr);
  for (size_t i = 0; i < processes_.size(); ++i) {
    if (!processes_[i].ended.empty()) continue;  // its trace says how it ended
    observed[i] = seen.Find(processes_[i].id);
  }
  auto gone = [](const ProcessObservation* o) {
    return o && (o->state == ProcessObservation::State::kGone ||
                 o->state == ProcessObservation::State::kZombie);
  };
  auto stopped = [](const ProcessObservation* o) {
    return o && o->state == ProcessObservation::State::kStopped;
  };
  // A process with no communicator (stuck in its rendezvous, or ended
  // before NCCL): live while it has no end, exists and beats; ended badly
  // by a signal, an error exit, or no end and gone (killed).
  for (size_t i = 0; i < processes_.size(); ++i) {
    const StatusProcess& p = processes_[i];
    if (p.has_streams) continue;
    if (p.ended.empty() && !gone(observed[i]) && (stopped(observed[i]) || !p.not_beating)) {
      status_.live = true;
    } else if (!p.exit_ok) {
      status_.ended_badly = true;
    }
  }
  for (CommStatus& c : status_.comms) {
    for (RankStatus& r : c.ranks) {
      const ProcessObservation* o = r.process < observed.size() ? observed[r.process] : nullptr;
      if (o == nullptr || !r.ended.empty()) continue;
      r.state = o->letter;
      if (gone(o)) {
        // Killed under the others: the job is stuck on it (as a rank whose
        // heartbeat stopped is), whatever the others' own state.
        r.gone = true;
        r.not_beating = false;
        r.stuck = true;
        r.ended = o->state == ProcessObservation::State::kZombie
                      ? "gone with no end recorded (a zombie: killed, or exited unseen)"
                      : "gone with no end recorded (killed: SIGKILL, the OOM killer)";
      } else if (stopped(o) && processes_[r.process].beats_stale) {
        // Stopped, and its watcher has missed a beat: a debugger's or a
        // profiler's brief stop (py-spy, perf) is not a frozen rank.
        r.frozen = true;
        r.stuck = true;
      }
    }
  }
  clocks_.Solve();
  arrivals_.AlignClocks(clocks_);
  gpu_arrivals_.AlignClocks(clocks_);
  auto row = [&](uint64_t comm, int32_t rank) -> RankStatus* {
    for (CommStatus& c : status_.comms)
      if (c.comm == comm)
        for (RankStatus& r : c.ranks)
          if (r.comm_rank == rank) return &r;
    return nullptr;
  };
  for (const RecentLateness& l : arrivals_.Recent(kRecentCollectives)) {
    if (RankStatus* r = row(l.comm, l.rank)) {
      r->arrivals_compared = l.compared;
      r->times_last = l.times_last;
      r->late_median_ns = l.median_late_ns;
    }
  }
  auto who = [&](const ArrivalStraggler& x, const RankStatus* r) {
    return r && r->global_rank >= 0 && r->global_rank != x.rank
               ? absl::StrFormat("rank %d (rank %d of communicator %s)", r->global_rank, x.rank,
                                 CommShort(x.comm))
               : absl::StrFormat("rank %d of communicator %s", x.rank, CommShort(x.comm));
  };
  // Slow links first: the ranks of a slow link's communicators wait on it,
  // and enqueue late after it; they are named for the link only.
  std::set<int> slow_links;  // processes
  for (const LinkStraggler& link : links_.Stragglers()) {
    const SlowComm& c = link.comms.front();
    std::vector<std::string> names;
    for (int p : link.processes) {
      slow_links.insert(p);
      for (size_t i = 0; i < c.member_processes.size(); ++i) {
        if (c.member_processes[i] != p) continue;
        RankStatus* r = row(c.comm, c.member_ranks[i]);
        if (r) r->straggler = true;
        names.push_back(r && r->global_rank >= 0
                            ? absl::StrFormat("rank %d", r->global_rank)
                            : absl::StrFormat("rank %d of communicator %s", c.member_ranks[i],
                                              CommShort(c.comm)));
      }
    }
    std::string also;
    for (size_t i = 1; i < link.comms.size(); ++i)
      also += (i > 1                   ? ", "
               : link.comms.size() > 2 ? "; so did communicators "
                                       : "; so did communicator ") +
              CommShort(link.comms[i].comm);
    for (const SlowComm& slow : link.comms)
      status_.stragglers_on_fewer_calls |= slow.summary_kept > 0;
    status_.stragglers.push_back(absl::StrFormat(
        "the link of %s is slow: %d of %d %ss of communicator %s took %s longer than usual on "
        "median, once every member had reached them%s",
        absl::StrJoin(names, " and "), c.call_times_last, c.call_compared, CallName(c.call),
        CommShort(c.comm), Late(c.median_late_ns), also));
  }
  // Slow GPUs next: a rank whose host waits on its slow GPU enqueues late
  // too, and is named for its GPU only (as the diagnosis does).
  std::set<std::pair<uint64_t, int32_t>> slow_gpus;
  for (const GpuStraggler& x : gpu_arrivals_.Stragglers()) {
    if (slow_links.count(x.process)) continue;
    RankStatus* r = row(x.comm, x.rank);
    if (r) r->straggler = true;
    slow_gpus.insert({x.comm, x.rank});
    status_.stragglers_on_fewer_calls |= x.summary_kept > 0;
    status_.stragglers.push_back(absl::StrFormat(
        "%s reached the GPU last in %d of %d %ss, %s late on median (its GPU is slow; its host "
        "enqueued %s)",
        who(x, r), x.call_times_last, x.call_compared, CallName(x.call), Late(x.median_late_ns),
        x.host_late_ns < GpuSkew::kMinGapNs ? "on time" : Late(x.host_late_ns) + " late"));
  }
  std::vector<ArrivalSpan> spans;
  const bool waits = !slow_gpus.empty() || !slow_links.empty();
  if (waits) spans = arrivals_.Spans();
  for (const ArrivalStraggler& x : arrivals_.Stragglers()) {
    if (slow_gpus.count({x.comm, x.rank}) || slow_links.count(x.process)) continue;
    if (waits && gpu_arrivals_.ExplainsHostStraggler(x, spans)) continue;
    RankStatus* r = row(x.comm, x.rank);
    if (r) r->straggler = true;
    status_.stragglers_on_fewer_calls |= x.summary_kept > 0;
    status_.stragglers.push_back(absl::StrFormat(
        "%s enqueued last in %d of %d %ss, %s late on median", who(x, r), x.call_times_last,
        x.call_compared, CallName(x.call), Late(x.median_late_ns)));
  }
  for (CommStatus& c : status_.comms) {
    std::sort(c.ranks.begin(), c.ranks.end(),
              [](const RankStatus& a, const RankStatus& b) { return a.comm_rank < b.comm_rank; });
    int64_t furthest = -1;
    for (const RankStatus& r : c.ranks) furthest = std::max(furthest, r.entered);
    for (RankStatus& r : c.ranks) {
      r.lagging = r.entered < furthest;
      r.behind = furthest - r.entered;
      status_.stuck = status_.stuck || r.stuck;
      status_.live = status_.live || r.ended.empty();
      // Ended in the middle of its work, or by a signal: the job did not end well.
      if (!r.ended.empty() && (!r.pending.empty() || r.gone || r.ended.rfind("died", 0) == 0))
        status_.ended_badly = true;
    }
  }
  return std::move(status_);
}

void WriteStatus(const JobStatus& s, std::ostream& out) {
  // The headline: STUCK with who and where, or PROGRESSING.
  std::vector<std::string> stuck_lines;
  for (const CommStatus& c : s.comms) {
    std::map<std::string, std::vector<int>> by_what;
    std::vector<int> lagging;
    for (const RankStatus& r : c.ranks) {
      if (r.stuck) {
        std::string what = r.gone             ? "gone with no end recorded (killed)"
                           : r.frozen         ? "stopped (frozen)"
                           : r.not_beating    ? "not beating (frozen or killed)"
                           : !r.error.empty() ? "failed: " + r.error
                                              : "stuck in " + r.pending;
        by_what[what].push_back(r.comm_rank);
      }
      if (r.lagging && r.ended.empty()) lagging.push_back(r.comm_rank);
    }
    for (const auto& [what, ranks] : by_what) {
      std::string line = "communicator " + CommShort(c.comm) + ": " + RanksNoun(ranks) + " " + what;
      if (!lagging.empty() && what.rfind("stuck", 0) == 0)
        line += ", waiting for " + RanksNoun(lagging) + " (behind)";
      stuck_lines.push_back(line);
    }
  }
  char when[64] = "";
  const time_t secs = static_cast<time_t>(s.now_ns / 1'000'000'000);
  struct tm tm;
  if (gmtime_r(&secs, &tm)) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  std::string text;
  if (!s.live && s.processes > 0) {
    text += s.ended_badly ? "ENDED BADLY: every process has ended, some by a signal, an error "
                            "exit or with work pending (ncclwatch diagnose says why)\n"
                          : "ENDED: every process has ended\n";
  } else if (s.stuck) {
    text += "STUCK: " + stuck_lines.front() + "\n";
    for (size_t i = 1; i < stuck_lines.size(); ++i) text += "       " + stuck_lines[i] + "\n";
  } else {
    text += "PROGRESSING\n";
  }
  if (!s.logs_problem.empty()) {
    text += absl::StrFormat(
        "DIAGNOSIS of the traces with the %d log%s beside them: %s (ncclwatch "
        "diagnose says why)\n",
        s.logs.size(), s.logs.size() == 1 ? "" : "s", s.logs_problem);
  }
  // Slow is not stuck: said under the headline, the exit code unchanged.
  for (const std::string& line : s.stragglers) text += "SLOW: " + line + "\n";
  text +=
      absl::StrFormat("ncclwatch status: %d process%s, %d communicator%s", s.processes,
                      s.processes == 1 ? "" : "es", s.comms.size(), s.comms.size() == 1 ? "" : "s");
  if (!s.logs.empty())
    text += absl::StrFormat(", %d log%s", s.logs.size(), s.logs.size() == 1 ? "" : "s");
  text += absl::StrFormat("; %s\n", when);
  for (const CommStatus& c : s.comms) {
    text += absl::StrFormat("\ncommunicator %s (%s ranks%s)\n", CommShort(c.comm),
                            c.nranks > 0 ? std::to_string(c.nranks) : "?",
                            c.nranks > 0 && static_cast<int>(c.ranks.size()) < c.nranks
                                ? absl::StrFormat(", %d traced", c.ranks.size())
                                : "");
    text +=
        absl::StrFormat("  %-5s %-22s %-8s %-10s %-13s %-13s %-16s %s\n", "rank", "process",
                        "entered", "completed", "progress", "heartbeat", "last (late)", "state");
    for (const RankStatus& r : c.ranks) {
      std::string process = r.host + ":" + std::to_string(r.pid);
      if (r.global_rank >= 0 && r.global_rank != r.comm_rank)
        process += " (rank " + std::to_string(r.global_rank) + ")";
      std::string state;
      if (!r.ended.empty()) {
        state = r.ended;
      } else if (r.frozen) {
        state = absl::StrFormat("STOPPED (state %c): frozen by a signal or a debugger", r.state);
      } else if (r.not_beating) {
        state = "NOT BEATING: no heartbeat for " + Ago(r.since_beat_ns) + ": frozen or killed";
      } else if (!r.error.empty()) {
        state = "ERROR: " + r.error;
      } else if (!r.pending.empty()) {
        state = (r.stuck ? "STUCK in " : "running ") + r.pending;
        if (r.stalled)
          state += absl::StrFormat(" (stall reported after %d s)", r.stall_waited_ms / 1000);
      } else if (!r.tracked) {
        state = "completion not tracked";
      } else {
        state = "idle (nothing pending)";
      }
      if (r.lagging && r.ended.empty()) state += "; lags behind the others";
      if (r.straggler) state += "; STRAGGLER";
      // How often it came last among the recent collectives, and by how much.
      std::string last = "-";
      if (r.arrivals_compared > 0) {
        last = absl::StrFormat("%d/%d", r.times_last, r.arrivals_compared);
        if (r.times_last > 0) last += " (" + Late(r.late_median_ns) + ")";
      }
      text += absl::StrFormat("  %-5d %-22s %-8s %-10s %-13s %-13s %-16s %s\n", r.comm_rank,
                              process, Seq(r.entered), r.tracked ? Seq(r.completed) : "?",
                              Ago(r.since_progress_ns), Ago(r.since_beat_ns), last, state);
    }
  }
  for (const std::string& u : s.unreadable) text += "unreadable: " + u + "\n";
  for (const std::string& u : s.logs_unreadable) text += "unreadable log: " + u + "\n";
  for (const std::string& u : s.not_searched)
    text += "not read, may hold a rank's trace: " + u + "\n";
  out << TerminalSafe(text);
}

}  // namespace ncclwatch::decoder
