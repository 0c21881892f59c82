// Notes beside the verdict: traces not read, calls node summaries left
// out, duplicate traces, how the ranks were set up, NCCL code the shim
// could not see.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/diagnosis/context.h"
#include "analysis/diagnosis/families.h"
#include "analysis/setup_notes.h"

namespace ncclwatch::decoder::diagnosis {

void NoteUnreadable(DiagnosisContext& cx) {
  if (cx.job.unreadable().empty()) return;
  Finding n;
  n.kind = FindingKind::kUnreadableTraces;
  n.role = FindingRole::kNote;
  UnreadableTracesFacts facts;
  for (const UnreadableTrace& u : cx.job.unreadable())
    (u.may_hold_traces ? facts.not_searched : facts.errors).push_back(u.error);
  n.facts = std::move(facts);
  cx.notes.push_back(n);
}

void NoteSummaryGaps(DiagnosisContext& cx) {
  SummaryGaps::Found found;
  if (cx.job.summary_gaps().any_left_out()) found = cx.job.summary_gaps().Find();
  const std::vector<SummaryGap>& gaps = found.gaps;
  const std::vector<P2pGap>& p2p_gaps = cx.job.p2p().gaps();
  if (gaps.empty() && p2p_gaps.empty()) return;
  // Gaps past a pair's first kMaxGapsPerPair, counted with the first job's.
  const size_t p2p_more = cx.job.p2p().more_gaps();
  std::map<int, SummaryGapFacts> by_job;
  constexpr size_t kListed = 8;
  auto node = [&](int process) {
    const ProcessRecord& p = cx.procs[process];
    if (p.summary.empty()) return p.path;
    return absl::StrCat(p.summary_host, " (", p.summary, ")");
  };
  for (const SummaryGap& g : gaps) {
    if (g.left_out.empty()) continue;
    SummaryGapFacts& facts = by_job[cx.job_of[g.left_out.front().first]];
    // Where the alignment found ranks that differ inside it, never a note
    // alone (FindCollectiveProblems left it to this one to say).
    auto unsaid = cx.unsaid_divergences.lower_bound({g.comm, g.first_seq});
    const bool ring_start = g.kind == SummaryGap::kNotCompared && g.ring_start &&
                            !(unsaid != cx.unsaid_divergences.end() &&
                              unsaid->first.first == g.comm && unsaid->first.second < g.end_seq);
    facts.ring_starts_only &= ring_start;
    if (facts.gaps.size() >= kListed) {
      ++facts.more;
      continue;
    }
    SummaryGapFacts::Gap x;
    x.differ = g.kind == SummaryGap::kDiffer;
    x.ring_start = ring_start;
    x.comm = g.comm;
    x.first_seq = g.first_seq;
    x.last_seq = g.end_seq - 1;
    std::set<std::string> left_nodes, other_nodes;
    // A sample of each side at most: the note stays short at any scale.
    constexpr size_t kRanks = 64, kNodes = 16;
    for (const auto& [process, rank] : g.left_out) {
      if (x.left_out_ranks.size() < kRanks)
        x.left_out_ranks.push_back(cx.Global(process, g.comm, rank));
      if (left_nodes.size() < kNodes) left_nodes.insert(node(process));
    }
    for (const auto& [process, rank] : g.kept) {
      if (x.other_ranks.size() < kRanks) x.other_ranks.push_back(cx.Global(process, g.comm, rank));
      if (other_nodes.size() < kNodes) other_nodes.insert(node(process));
    }
    std::sort(x.left_out_ranks.begin(), x.left_out_ranks.end());
    std::sort(x.other_ranks.begin(), x.other_ranks.end());
    x.left_out_nodes.assign(left_nodes.begin(), left_nodes.end());
    x.other_nodes.assign(other_nodes.begin(), other_nodes.end());
    facts.gaps.push_back(std::move(x));
  }
  // Sends and receives: the side (or sides) whose summary left them out,
  // and the other.
  for (const P2pGap& g : p2p_gaps) {
    const int left_process = g.sender_left_out ? g.sender_process : g.receiver_process;
    SummaryGapFacts& facts = by_job[cx.job_of[left_process]];
    facts.ring_starts_only &= g.kind == P2pGap::kNotCompared && g.ring_start;
    if (facts.gaps.size() >= kListed) {
      ++facts.more;
      continue;
    }
    SummaryGapFacts::Gap x;
    x.differ = g.kind == P2pGap::kDiffer;
    x.ring_start = g.kind == P2pGap::kNotCompared && g.ring_start;
    x.sends = true;
    x.comm = g.comm;
    x.first_seq = g.first_seq;
    x.last_seq = g.end_seq - 1;
    x.sender = cx.Global(g.sender_process, g.comm, g.sender);
    x.receiver = cx.Global(g.receiver_process, g.comm, g.receiver);
    auto side = [&](bool left, int rank, int process) {
      (left ? x.left_out_ranks : x.other_ranks).push_back(rank);
      (left ? x.left_out_nodes : x.other_nodes).push_back(node(process));
    };
    side(g.sender_left_out, x.sender, g.sender_process);
    side(g.receiver_left_out, x.receiver, g.receiver_process);
    facts.gaps.push_back(std::move(x));
  }
  // Those not listed, counted with the first job's (each of a sort its
  // communicator or pair lists many of already: SummaryGaps, P2pMatching).
  if (!by_job.empty()) by_job.begin()->second.more += found.more + p2p_more;
  // A job whose ranks the alignment saw differ where a summary left a call
  // out: not a note alone, whichever gap (listed or not) holds it.
  for (const auto& [where, job] : cx.unsaid_divergences) {
    auto it = by_job.find(job);
    if (it != by_job.end()) it->second.ring_starts_only = false;
  }
  for (auto& [job, facts] : by_job) {
    Finding n;
    n.kind = FindingKind::kSummaryGap;
    n.role = FindingRole::kNote;
    n.job = job;
    const SummaryGapFacts::Gap& first = facts.gaps.front();
    n.comm = first.comm;
    n.seq = first.first_seq;
    std::set<int> ranks;
    for (const SummaryGapFacts::Gap& g : facts.gaps)
      ranks.insert(g.left_out_ranks.begin(), g.left_out_ranks.end());
    n.ranks.assign(ranks.begin(), ranks.end());
    n.facts = std::move(facts);
    cx.notes.push_back(std::move(n));
  }
}

void NoteDuplicates(DiagnosisContext& cx) {
  if (cx.job.duplicates().empty()) return;
  Finding n;
  n.kind = FindingKind::kDuplicateTraces;
  n.role = FindingRole::kNote;
  DuplicateTracesFacts facts;
  for (const auto& [path, first] : cx.job.duplicates()) facts.duplicates.push_back({path, first});
  n.facts = std::move(facts);
  cx.notes.push_back(n);
}

void NoteSetup(DiagnosisContext& cx) {
  for (size_t j = 0; j < cx.jobs.size(); ++j) {
    std::vector<const InitEvidence*> ranks;
    for (int q : cx.jobs[j]) ranks.push_back(&cx.procs[q].init);
    for (Finding& n : SetupNotes(ranks)) {
      n.job = static_cast<int>(j);
      cx.notes.push_back(std::move(n));
    }
  }
}

void NoteNotVisible(DiagnosisContext& cx) {
  std::map<int, NcclNotVisibleFacts> by_job;
  for (const ProcessRecord& p : cx.procs) {
    for (const NcclNotSeenEvent& e : p.not_seen) {
      NcclNotVisibleFacts::Item item;
      item.process = p.index;
      item.rank = p.rank;
      item.host = p.host;
      item.pid = p.pid;
      item.reason = e.reason;
      item.path = e.path;
      item.comm = e.comm;
      item.calls_seen = e.calls_seen;
      by_job[cx.job_of[p.index]].items.push_back(std::move(item));
    }
  }
  for (auto& [job, facts] : by_job) {
    Finding n;
    n.kind = FindingKind::kNcclNotVisible;
    n.role = FindingRole::kNote;
    n.job = job;
    std::set<int> ranks;
    for (const NcclNotVisibleFacts::Item& i : facts.items)
      if (i.rank >= 0) ranks.insert(i.rank);
    n.ranks.assign(ranks.begin(), ranks.end());
    n.facts = std::move(facts);
    cx.notes.push_back(std::move(n));
  }
}

}  // namespace ncclwatch::decoder::diagnosis
