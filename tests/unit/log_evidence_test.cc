// diagnose with logs beside traces: what the logs explain leads, what the
// traces concluded follows it, the rest of the logs are notes, and a pid
// names a rank only where the host's numbers are the traces' own.

#include "analysis/log_evidence.h"

#include <catch2/catch.hpp>
#include <vector>

namespace {

using ncclwatch::decoder::AddLogEvidence;
using ncclwatch::decoder::Diagnosis;
using ncclwatch::decoder::Finding;
using ncclwatch::decoder::FindingKind;
using ncclwatch::decoder::FindingRole;
using ncclwatch::decoder::kInitPidNamespace;
using ncclwatch::decoder::LogCause;
using ncclwatch::decoder::LogDiagnosis;
using ncclwatch::decoder::LogFacts;
using ncclwatch::decoder::TracedPid;

Finding Make(FindingKind kind, FindingRole role, std::vector<int> ranks = {}) {
  Finding f;
  f.kind = kind;
  f.role = role;
  f.ranks = std::move(ranks);
  return f;
}

LogDiagnosis OomAndWatchdog(int pid) {
  LogDiagnosis l;
  Finding oom = Make(FindingKind::kOutOfMemory, FindingRole::kRootCause);
  LogFacts x;
  x.cause = LogCause::kHostOutOfMemory;
  x.memory = "host";
  x.pid = pid;
  oom.facts = x;
  l.findings.push_back(oom);
  l.findings.push_back(Make(FindingKind::kWatchdogTimeout, FindingRole::kConsequence, {0, 1}));
  l.problem = true;
  return l;
}

Diagnosis Died(int rank) {
  Diagnosis d;
  d.findings.push_back(Make(FindingKind::kRankDied, FindingRole::kRootCause, {rank}));
  d.findings.push_back(Make(FindingKind::kMissingTraces, FindingRole::kNote));
  d.problem = true;
  return d;
}

}  // namespace

TEST_CASE("the OOM kill leads, the death it caused follows, the watchdog is a note", "[logs]") {
  Diagnosis d = Died(3);
  AddLogEvidence(OomAndWatchdog(4242), {{4240, kInitPidNamespace, 1}, {4242, kInitPidNamespace, 3}},
                 &d);
  REQUIRE(d.findings.size() == 4);
  CHECK(d.problem);
  CHECK(d.findings[0].kind == FindingKind::kOutOfMemory);
  CHECK(d.findings[0].role == FindingRole::kRootCause);
  CHECK(d.findings[0].ranks == std::vector<int>{3});  // the victim's pid is rank 3's
  CHECK(d.findings[1].kind == FindingKind::kRankDied);
  CHECK(d.findings[1].role == FindingRole::kConsequence);
  CHECK(d.findings[2].kind == FindingKind::kMissingTraces);
  CHECK(d.findings[2].role == FindingRole::kNote);
  CHECK(d.findings[3].kind == FindingKind::kWatchdogTimeout);
  CHECK(d.findings[3].role == FindingRole::kNote);
}

TEST_CASE("a pid names no rank in a container's numbers or on two hosts", "[logs]") {
  auto oom = [](const Diagnosis& d) -> const Finding& {
    for (const Finding& f : d.findings)
      if (f.kind == FindingKind::kOutOfMemory) return f;
    FAIL("no out_of_memory finding");
    return d.findings.front();
  };
  SECTION("a container's pid namespace") {
    Diagnosis d = Died(3);
    AddLogEvidence(OomAndWatchdog(7), {{7, 4026532001u, 3}}, &d);
    CHECK(oom(d).ranks.empty());
  }
  SECTION("the same pid on two hosts") {
    Diagnosis d = Died(3);
    AddLogEvidence(OomAndWatchdog(7), {{7, kInitPidNamespace, 3}, {7, kInitPidNamespace, 5}}, &d);
    CHECK(oom(d).ranks.empty());
  }
  SECTION("with traces that name no rank, the OOM kill still leads") {
    Diagnosis d;
    d.findings.push_back(Make(FindingKind::kHangUnexplained, FindingRole::kRootCause));
    d.problem = true;
    AddLogEvidence(OomAndWatchdog(7), {}, &d);
    CHECK(d.findings[0].kind == FindingKind::kOutOfMemory);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
  }
}

TEST_CASE("logs with a problem never leave healthy traces healthy, warnings stay notes", "[logs]") {
  SECTION("a problem the traces did not see") {
    Diagnosis d;  // healthy
    LogDiagnosis l;
    l.findings.push_back(Make(FindingKind::kRendezvousFailure, FindingRole::kRootCause, {1}));
    l.findings.push_back(Make(FindingKind::kWatchdogTimeout, FindingRole::kConsequence, {0}));
    l.problem = true;
    AddLogEvidence(l, {}, &d);
    CHECK(d.problem);
    REQUIRE(d.findings.size() == 2);
    CHECK(d.findings[0].kind == FindingKind::kRendezvousFailure);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kNote);
  }
  SECTION("a warning only") {
    Diagnosis d;
    LogDiagnosis l;
    l.findings.push_back(Make(FindingKind::kTeardownHang, FindingRole::kWarning));
    AddLogEvidence(l, {}, &d);
    CHECK_FALSE(d.problem);
    REQUIRE(d.findings.size() == 1);
    CHECK(d.findings[0].role == FindingRole::kNote);
  }
}

TEST_CASE("the logs do not displace what the traces found better", "[logs]") {
  SECTION("a GPU fault the traces already name, with its rank") {
    Diagnosis d;
    d.findings.push_back(Make(FindingKind::kGpuFault, FindingRole::kRootCause, {2}));
    d.problem = true;
    LogDiagnosis l;
    l.findings.push_back(Make(FindingKind::kGpuFault, FindingRole::kRootCause));
    l.problem = true;
    AddLogEvidence(l, {}, &d);
    REQUIRE(d.findings.size() == 2);
    CHECK(d.findings[0].ranks == std::vector<int>{2});
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kNote);
  }
  SECTION("an OOM kill of no known rank beside a death the traces name") {
    Diagnosis d = Died(3);
    AddLogEvidence(OomAndWatchdog(7), {{7, 4026532001u, 3}}, &d);
    CHECK(d.findings[0].kind == FindingKind::kRankDied);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings.back().role == FindingRole::kNote);
  }
}

TEST_CASE("a log's cause for a rank with no trace leads where the traces' root cause names it",
          "[logs]") {
  // The traces: rank 1 never came to the rendezvous (ranks_missing). Rank 1
  // ran without the shim; its log says its store connection was refused.
  auto traces = [] {
    Diagnosis d;
    d.findings.push_back(
        Make(FindingKind::kRendezvousFailure, FindingRole::kRootCause, /*ranks=*/{1}));
    d.problem = true;
    return d;
  };
  LogDiagnosis logs;
  logs.findings.push_back(Make(FindingKind::kRendezvousFailure, FindingRole::kRootCause, {1}));
  logs.findings.push_back(Make(FindingKind::kWatchdogTimeout, FindingRole::kConsequence, {1}));
  logs.problem = true;
  SECTION("rank 1 has no trace: its log says why it never came") {
    Diagnosis d = traces();
    AddLogEvidence(logs, {{4240, kInitPidNamespace, 0}}, &d);
    REQUIRE(d.findings.size() == 3);
    CHECK(d.findings[0].kind == FindingKind::kRendezvousFailure);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].kind == FindingKind::kRendezvousFailure);
    CHECK(d.findings[1].role == FindingRole::kConsequence);      // the traces' ranks_missing
    CHECK(d.findings[2].kind == FindingKind::kWatchdogTimeout);  // another view of the wait
    CHECK(d.findings[2].role == FindingRole::kNote);
  }
  SECTION("rank 1 has a trace: the traces say it, the log is a note") {
    Diagnosis d = traces();
    AddLogEvidence(logs, {{4240, kInitPidNamespace, 0}, {4241, kInitPidNamespace, 1}}, &d);
    REQUIRE(d.findings.size() == 3);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kNote);
    CHECK(d.findings[2].role == FindingRole::kNote);
  }
  SECTION("the logs led with the traced rank: the untraced rank's first cause leads, once") {
    // Rank 0 (the store's server) printed its timeout first; rank 1's
    // client timeout, and its stack's words for it, came after.
    LogDiagnosis server_first;
    server_first.findings.push_back(
        Make(FindingKind::kRendezvousFailure, FindingRole::kRootCause, {0}));
    server_first.findings.push_back(
        Make(FindingKind::kRendezvousFailure, FindingRole::kConsequence, {1}));
    server_first.findings.push_back(
        Make(FindingKind::kRendezvousFailure, FindingRole::kConsequence, {1}));
    server_first.problem = true;
    Diagnosis d = traces();
    AddLogEvidence(server_first, {{4240, kInitPidNamespace, 0}}, &d);
    REQUIRE(d.findings.size() == 4);
    CHECK(d.findings[0].ranks == std::vector<int>{1});  // rank 1's client timeout
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kConsequence);  // the traces' ranks_missing
    CHECK(d.findings[2].role == FindingRole::kNote);         // rank 0's, the traces say it
    CHECK(d.findings[3].role == FindingRole::kNote);         // rank 1's second
  }
  SECTION("a root cause the traces found in a rank's own evidence is not an absence") {
    Diagnosis d;
    d.findings.push_back(Make(FindingKind::kInitFailure, FindingRole::kRootCause, {1}));
    d.problem = true;
    AddLogEvidence(logs, {{4240, kInitPidNamespace, 0}}, &d);
    CHECK(d.findings[0].kind == FindingKind::kInitFailure);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kNote);
  }
  SECTION("a trace with no rank: no rank is known to have none") {
    Diagnosis d = traces();
    AddLogEvidence(logs, {{4240, kInitPidNamespace, 0}, {4241, kInitPidNamespace, -1}}, &d);
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[0].ranks == std::vector<int>{1});
    CHECK(d.findings[1].role == FindingRole::kNote);
  }
  SECTION("a log's cause for an untraced rank the traces' root cause does not name is a note") {
    Diagnosis d = traces();
    LogDiagnosis other = logs;
    other.findings[0].ranks = {2};
    AddLogEvidence(other, {{4240, kInitPidNamespace, 0}}, &d);
    CHECK(d.findings[0].kind == FindingKind::kRendezvousFailure);
    CHECK(d.findings[0].ranks == std::vector<int>{1});
    CHECK(d.findings[0].role == FindingRole::kRootCause);
    CHECK(d.findings[1].role == FindingRole::kNote);
  }
}
