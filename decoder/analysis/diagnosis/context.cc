#include "analysis/diagnosis/context.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include "analysis/concurrent_ranks.h"
#include "ncclwatch/trace_fields.h"

namespace ncclwatch::decoder::diagnosis {

namespace {

namespace f = ::ncclwatch::fields;

bool IsInitCall(uint32_t call) {
  return call == f::kCommInitRank || call == f::kCommInitRankConfig || call == f::kCommInitAll ||
         call == f::kCommInitRankScalable || call == f::kCommSplit || call == f::kCommShrink ||
         call == f::kGetUniqueId;
}

bool IsEndCall(uint32_t call) {
  return call == f::kCommFinalize || call == f::kCommDestroy || call == f::kCommAbort ||
         call == f::kCommRevoke;
}

}  // namespace

HangPhase PhaseOfCall(const LastCall& c) {
  if (IsInitCall(c.call)) return HangPhase::kStartup;
  if (IsEndCall(c.call)) return HangPhase::kTeardown;
  if (c.has_seq && c.seq == 0 && c.call != f::kSend && c.call != f::kRecv)
    return HangPhase::kStartup;
  return HangPhase::kStep;
}

bool CrashSignal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL ||
         signo == SIGABRT || signo == SIGSYS || signo == SIGTRAP;
}

DiagnosisContext::DiagnosisContext(const JobAnalysis& analysis,
                                   const LivenessObservation& observation)
    : job(analysis), procs(analysis.processes()), observed(observation) {
  ClusterJobs();
  for (const ProcessRecord& p : procs) end_ns = std::max(end_ns, p.last_ns);
  Lives();
  Reconcile();
  IndexFinished();
}

void DiagnosisContext::ClusterJobs() {
  std::vector<int> parent(procs.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<uint64_t, int> first;
  for (const ProcessRecord& p : procs) {
    for (const CommMembership& m : p.comms) {
      if (m.comm == 0) continue;
      auto [it, fresh] = first.emplace(m.comm, p.index);
      if (!fresh) parent[find(p.index)] = find(it->second);
    }
  }
  // The process that made a communicator's unique id hosts its bootstrap
  // root, and belongs to that communicator's job even when it never joined
  // it (it may have exited before the others started).
  for (const ProcessRecord& p : procs) {
    if (p.init.made_unique_id == 0) continue;
    if (auto it = first.find(p.init.made_unique_id); it != first.end())
      parent[find(p.index)] = find(it->second);
  }
  // A job whose communicators never formed (its ranks disagreed on the
  // root, say) shares none: its processes are the launcher's ranks of one
  // job id, or of one program and world size that ran at the same time.
  std::map<std::string, int> by_job_id;
  for (const ProcessRecord& p : procs) {
    if (p.job_id.empty()) continue;
    auto [it, fresh] = by_job_id.emplace(p.job_id, p.index);
    if (!fresh) parent[find(p.index)] = find(it->second);
  }
  // Ranks stuck before NCCL (in their rendezvous) may disagree on the
  // world size itself: those are one job too. Two processes of the same
  // launcher, program and world size (or both before NCCL) that ran at
  // the same time as different ranks are one job (analysis/
  // concurrent_ranks.h: a sweep in time, not every pair).
  auto before_nccl = [](const ProcessRecord& p) {
    return p.comms.empty() && p.rendezvous.traced_from_load;
  };
  // Class key: (rank source, program, has a host, world size or -1 for
  // the class of those before NCCL, whatever their size).
  std::map<std::tuple<std::string, std::string, bool, int32_t>, std::vector<int>> classes;
  for (const ProcessRecord& a : procs) {
    if (!a.job_id.empty() || a.rank_source.empty() || a.world_size <= 0) continue;
    classes[{a.rank_source, a.exe, a.host.empty(), a.world_size}].push_back(a.index);
    if (before_nccl(a)) classes[{a.rank_source, a.exe, a.host.empty(), -1}].push_back(a.index);
  }
  for (const auto& entry : classes) {
    const std::vector<int>& members = entry.second;  // (a lambda takes no structured binding)
    std::vector<RankSpan> spans;
    for (int q : members) spans.push_back({procs[q].first_ns, procs[q].last_ns, procs[q].rank});
    JoinConcurrentRanks(spans,
                        [&](size_t a, size_t b) { parent[find(members[b])] = find(members[a]); });
  }
  // torchrun's agents (no rank: analysis/rendezvous.h) of one program that
  // ran at the same time are one job, their node ranks told apart as ranks
  // are (an agent whose node is not known, c10d's, counts as a node of its
  // own).
  std::map<std::pair<std::string, bool>, std::vector<int>> agents;
  for (const ProcessRecord& a : procs)
    if (a.rendezvous.agent && a.job_id.empty()) agents[{a.exe, a.host.empty()}].push_back(a.index);
  for (const auto& entry : agents) {
    const std::vector<int>& members = entry.second;
    std::vector<RankSpan> spans;
    for (int q : members) {
      const int node = procs[q].rendezvous.rank;
      spans.push_back({procs[q].first_ns, procs[q].last_ns, node >= 0 ? node : -2 - q});
    }
    JoinConcurrentRanks(spans,
                        [&](size_t a, size_t b) { parent[find(members[b])] = find(members[a]); });
  }
  std::map<int, int> job_of_root;
  job_of.assign(procs.size(), 0);
  for (const ProcessRecord& p : procs) {
    const int root = find(p.index);
    auto [it, fresh] = job_of_root.emplace(root, static_cast<int>(jobs.size()));
    if (fresh) jobs.emplace_back();
    jobs[it->second].push_back(p.index);
    job_of[p.index] = it->second;
  }
}

int DiagnosisContext::Global(int process, uint64_t comm, int32_t rank) const {
  return job.GlobalRank(process, comm, rank);
}

int DiagnosisContext::RankOf(int q, uint64_t comm) const {
  for (const CommCompletion& c : Comms(q))
    if (c.comm == comm) return Global(q, comm, c.rank);
  return procs[q].rank;
}

std::vector<int> DiagnosisContext::WaitingOthers(int q) const {
  std::vector<int> out;
  for (int o : jobs[job_of[q]])
    if (o != q && Waiting(o)) out.push_back(procs[o].rank);
  std::sort(out.begin(), out.end());
  return out;
}

void DiagnosisContext::Locate(int q, uint64_t comm, Finding* x,
                              std::optional<uint64_t>* completed) const {
  x->ranks = {RankOf(q, comm)};
  LastCall op;
  for (const CommCompletion& c : Comms(q)) {
    if (c.comm != comm) continue;
    if (c.tracked && c.has_progress) *completed = c.completed;
    if (c.pending) op = c.oldest;
    // Its watcher wrote no Progress (it faulted or died first): the
    // collective it had not finished is the first the other members had
    // not finished either.
    if (c.tracked && !c.has_progress && c.pending) {
      std::optional<uint64_t> frontier;
      for (const ProcessRecord& o : procs) {
        if (o.index == q) continue;
        for (const CommCompletion& oc : Comms(o.index))
          if (oc.comm == comm && oc.has_progress)
            frontier = std::min(frontier.value_or(UINT64_MAX), oc.completed);
      }
      if (frontier && *frontier < c.issued) {
        op = LastCall{true, op.call, comm, *frontier, true, false, op.when_ns, 0};
        if (const auto al = job.alignments().find(comm); al != job.alignments().end()) {
          CollectiveSignature sig;
          if (al->second.ReferenceAt(*frontier, &sig, &op.when_ns, nullptr, &op.caller))
            op.call = sig.call;
        }
      }
    }
  }
  if (!op.valid && comm == 0) op = Doing(q);
  if (op.valid && op.comm != 0) comm = op.comm;
  if (comm != 0) {
    x->comm = comm;
    x->nranks = job.CommSize(comm);
  }
  if (op.valid && op.has_seq) x->seq = op.seq;
  if (op.valid) x->phase = PhaseOfCall(op);
}

}  // namespace ncclwatch::decoder::diagnosis
