// One-sided signal matching on synthetic traces: the signals rank s sent
// rank d (puts and bare signals, numbered from 0) against the signals d's
// waits need from s; a peer whose trace is missing or wrapped proves nothing.

#include "analysis/signal_matching.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "ncclwatch/trace_fields.h"

namespace {

using ncclwatch::decoder::OneSidedEvent;
using ncclwatch::decoder::ProcessTrace;
using ncclwatch::decoder::SignalMatching;
using ncclwatch::decoder::SignalProblem;
namespace f = ncclwatch::fields;

constexpr uint64_t kComm = 0xbeef;

void Put(ProcessTrace* t, int rank, int peer, uint64_t seq, uint32_t call = f::kPutSignal,
         int32_t result = 0) {
  OneSidedEvent e;
  e.order = t->one_sided.size() + 1;
  e.comm = kComm;
  e.rank = rank;
  e.call = call;
  e.peer = peer;
  e.seq = seq;
  e.result = result;
  t->one_sided.push_back(e);
}

void Wait(ProcessTrace* t, int rank, int peer, uint64_t seq, int op_cnt, uint64_t caller = 0) {
  OneSidedEvent e;
  e.order = t->one_sided.size() + 1;
  e.comm = kComm;
  e.rank = rank;
  e.call = f::kWaitSignal;
  e.result = 0;
  e.caller = caller;
  e.waits.push_back({peer, op_cnt, seq});
  t->one_sided.push_back(e);
}

// Rank r is process r; `whole` says which ranks' traces are there whole.
std::vector<SignalProblem> Match(const std::vector<ProcessTrace>& traces,
                                 const std::vector<bool>& whole = {true, true}) {
  SignalMatching m;
  for (size_t i = 0; i < traces.size(); ++i) m.AddProcess(static_cast<int>(i), traces[i]);
  m.Finish([&](uint64_t comm, int32_t rank, int* process) {
    if (comm != kComm || rank < 0 || rank >= static_cast<int32_t>(whole.size())) return false;
    *process = rank;
    return static_cast<bool>(whole[static_cast<size_t>(rank)]);
  });
  return m.problems();
}

}  // namespace

TEST_CASE("signals sent and awaited alike: no problem, whichever process comes first",
          "[signals]") {
  ProcessTrace r0, r1;
  Put(&r0, 0, 1, 0);
  Put(&r0, 0, 1, 1, f::kSignal);
  Put(&r0, 0, 1, 2);
  Wait(&r1, 1, 0, 0, 1);
  Wait(&r1, 1, 0, 1, 2);
  CHECK(Match({r0, r1}).empty());
  CHECK(Match({r1, r0}).empty());
  // Signals sent and not (yet) awaited are no problem either.
  Put(&r0, 0, 1, 3);
  CHECK(Match({r0, r1}).empty());
}

TEST_CASE("a wait for a signal never sent: the first missing number, the wait that needs it",
          "[signals]") {
  ProcessTrace r0, r1;
  Put(&r0, 0, 1, 0);
  Put(&r0, 0, 1, 1);
  Wait(&r1, 1, 0, 0, 1, 0x10);
  Wait(&r1, 1, 0, 1, 1, 0x20);
  Wait(&r1, 1, 0, 2, 2, 0x30);  // needs #2 and #3
  const std::vector<SignalProblem> p = Match({r0, r1});
  REQUIRE(p.size() == 1);
  CHECK(p[0].comm == kComm);
  CHECK(p[0].sender == 0);
  CHECK(p[0].receiver == 1);
  CHECK(p[0].sender_process == 0);
  CHECK(p[0].receiver_process == 1);
  CHECK(p[0].seq == 2);
  CHECK(p[0].sent == 2);
  CHECK(p[0].awaited == 4);
  CHECK(p[0].caller == 0x30);
}

TEST_CASE("a refused put is no signal, a sender that sent none at all is named", "[signals]") {
  ProcessTrace r0, r1;
  Put(&r0, 0, 1, 0, f::kPutSignal, /*ncclInvalidArgument*/ 4);
  Wait(&r1, 1, 0, 0, 1);
  const std::vector<SignalProblem> p = Match({r0, r1});
  REQUIRE(p.size() == 1);
  CHECK(p[0].seq == 0);
  CHECK(p[0].sent == 0);
  CHECK(p[0].sender_process == 0);
}

TEST_CASE("a sender whose trace is missing or wrapped proves nothing", "[signals]") {
  ProcessTrace r1;
  Wait(&r1, 1, 0, 0, 1);
  ProcessTrace empty;
  CHECK(Match({empty, r1}, {false, true}).empty());  // rank 0's trace lost its start
  CHECK(Match({empty, r1}, {true, true}).size() == 1);
}
