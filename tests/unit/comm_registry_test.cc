// The shim's communicator registry (shim/core/comm_registry.h): entries are
// found by handle, freed and reused, more tables are mapped past 4,096 live
// communicators, adopted handles get a process-local identity, and a
// lookup never waits for an entry another thread (or the code a signal
// handler interrupted) is completing.

#include "core/comm_registry.h"

#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace ncclwatch::shim {
uint32_t g_pid = 4242;  // the tracer's (core/tracer.h), which adopted identities hash
}  // namespace ncclwatch::shim

namespace {

using ncclwatch::shim::CommRegistry;
using ncclwatch::shim::CommState;

// Handles as NCCL's would be: distinct, 16-byte aligned addresses.
const void* Handle(uint64_t i) {
  return reinterpret_cast<const void*>(0x7f0000000000ull + i * 0x1230);
}

// A registry per test: it is 256 KiB, so on the heap.
std::unique_ptr<CommRegistry> NewRegistry() { return std::make_unique<CommRegistry>(); }

}  // namespace

TEST_CASE("registered communicators are found by handle, with what was registered",
          "[shim][comm_registry]") {
  auto r = NewRegistry();
  CHECK(r->Find(Handle(1)) == nullptr);
  CHECK(r->Find(nullptr) == nullptr);
  CommState* a = r->Register(Handle(1), 0xaaaa, 3, 8);
  CommState* b = r->Register(Handle(2), 0xbbbb, 0, 2);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a != b);
  CHECK(r->Find(Handle(1)) == a);
  CHECK(r->Find(Handle(2)) == b);
  CHECK(a->id == 0xaaaa);
  CHECK(a->rank == 3);
  CHECK(a->nranks == 8);
  REQUIRE(a->p2p_seq != nullptr);  // 8 sends and 8 receives, zeroed
  for (int i = 0; i < 16; ++i) CHECK(a->p2p_seq[i] == 0);
  CHECK(r->LiveEntries() == 2);
  // A new communicator at a reused address: the same entry, new contents.
  a->next_seq = 41;
  CommState* again = r->Register(Handle(1), 0xcccc, 1, 4);
  CHECK(again == a);
  CHECK(again->id == 0xcccc);
  CHECK(again->next_seq == 0);
  CHECK(r->LiveEntries() == 2);
}

TEST_CASE("a removed communicator's entry is freed and reused: the table holds the live ones",
          "[shim][comm_registry]") {
  auto r = NewRegistry();
  CommState* a = r->Register(Handle(1), 1, 0, 2);
  r->Remove(Handle(1));
  CHECK(r->Find(Handle(1)) == nullptr);
  CHECK(a->handle == CommRegistry::kRemoved);
  CHECK(a->p2p_seq == nullptr);  // its counters unmapped
  CHECK(r->LiveEntries() == 0);
  r->Remove(Handle(1));  // twice: nothing
  // 100,000 communicators made and destroyed at new addresses (4,096 was
  // the most the table ever held): each found while alive.
  for (uint64_t i = 0; i < 100000; ++i) {
    CommState* c = r->Register(Handle(1000 + i), i, 0, 2);
    REQUIRE(c != nullptr);
    REQUIRE(r->Find(Handle(1000 + i)) == c);
    REQUIRE(c->id == i);
    r->Remove(Handle(1000 + i));
  }
  CHECK(r->LiveEntries() == 0);
  // Freed entries on a key's path do not hide the live key behind them.
  std::vector<CommState*> live;
  for (uint64_t i = 0; i < 3000; ++i) live.push_back(r->Register(Handle(500000 + i), i, 0, -1));
  for (uint64_t i = 0; i < 3000; i += 2) r->Remove(Handle(500000 + i));
  for (uint64_t i = 1; i < 3000; i += 2) REQUIRE(r->Find(Handle(500000 + i)) == live[i]);
  CHECK(r->LiveEntries() == 1500);
}

TEST_CASE("past 4,096 live communicators the registry maps more tables, and finds them all",
          "[shim][comm_registry]") {
  auto r = NewRegistry();
  constexpr uint64_t kLive = 3 * CommRegistry::kEntries + 17;
  std::set<CommState*> entries;
  for (uint64_t i = 0; i < kLive; ++i) {
    CommState* c = r->Register(Handle(i), i, 0, -1);
    REQUIRE(c != nullptr);
    entries.insert(c);
  }
  CHECK(entries.size() == kLive);
  CHECK(r->LiveEntries() == kLive);
  for (uint64_t i = 0; i < kLive; ++i) {
    CommState* c = r->Find(Handle(i));
    REQUIRE(c != nullptr);
    REQUIRE(c->id == i);
  }
  CHECK(r->Find(Handle(kLive)) == nullptr);
  // One freed in the first table: the next goes there, and the ones in
  // later tables are still found.
  r->Remove(Handle(5));
  CommState* c = r->Register(Handle(kLive), kLive, 0, -1);
  REQUIRE(c != nullptr);
  CHECK(r->Find(Handle(kLive)) == c);
  for (uint64_t i = 0; i < kLive; ++i)
    if (i != 5) REQUIRE(r->Find(Handle(i))->id == i);
}

TEST_CASE("a handle the shim never saw made is adopted with an identity local to the process",
          "[shim][comm_registry]") {
  auto r = NewRegistry();
  CommState* c = r->FindOrAdopt(Handle(9));
  REQUIRE(c != nullptr);
  CHECK(c->rank == -1);
  CHECK(c->nranks == -1);
  CHECK(c->p2p_seq == nullptr);
  CHECK(c->id != 0);
  CHECK(r->FindOrAdopt(Handle(9)) == c);  // once
  auto other = NewRegistry();             // the same handle in another registry: the same identity
  CHECK(other->FindOrAdopt(Handle(9))->id == c->id);
  ncclwatch::shim::g_pid = 4243;  // another process's
  auto third = NewRegistry();
  CHECK(third->FindOrAdopt(Handle(9))->id != c->id);
  ncclwatch::shim::g_pid = 4242;
  CHECK(r->FindOrAdopt(nullptr) == nullptr);
}

TEST_CASE("threads adopting one handle at once share one entry", "[shim][comm_registry]") {
  for (int round = 0; round < 200; ++round) {
    auto r = NewRegistry();
    constexpr int kThreads = 4;
    std::atomic<int> go{0};
    std::vector<CommState*> seen(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        go.fetch_add(1);
        while (go.load() < kThreads) {
        }
        seen[t] = r->FindOrAdopt(Handle(77));
      });
    }
    for (auto& t : threads) t.join();
    // Each got the entry, or (finding it half-made) nothing: never a second one.
    CommState* entry = r->Find(Handle(77));
    REQUIRE(entry != nullptr);
    for (CommState* s : seen) CHECK((s == entry || s == nullptr));
    CHECK(r->LiveEntries() == 1);
  }
}

namespace {

CommRegistry* g_signal_registry = nullptr;
std::atomic<int> g_in_handler{0};
std::atomic<int> g_handler_done{0};
CommState* g_handler_saw = reinterpret_cast<CommState*>(1);

void LookUpInHandler(int) {
  // A handler that interrupted its thread while that thread's entry was
  // not complete: the lookup must return, not wait for the code it
  // interrupted.
  g_in_handler = 1;
  g_handler_saw = g_signal_registry->FindOrAdopt(Handle(55));
  g_handler_done = 1;
}

}  // namespace

TEST_CASE("a lookup from a signal handler never waits for an entry its own thread is completing",
          "[shim][comm_registry][signals]") {
  // FindOrAdopt spun on such an entry's `ready` flag: a handler that
  // interrupted its own thread's adoption hung forever.
  auto r = NewRegistry();
  g_signal_registry = r.get();
  // The state an interrupted adoption leaves: the handle claimed, not ready.
  CommState* c = r->FindOrAdopt(Handle(55));
  REQUIRE(c != nullptr);
  __atomic_store_n(&c->ready, 0u, __ATOMIC_RELEASE);
  struct sigaction sa = {};
  sa.sa_handler = LookUpInHandler;
  struct sigaction old;
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
  std::thread([&] { raise(SIGUSR1); }).join();
  sigaction(SIGUSR1, &old, nullptr);
  CHECK(g_in_handler == 1);
  CHECK(g_handler_done == 1);
  CHECK(g_handler_saw == nullptr);  // that one call goes unnumbered
  __atomic_store_n(&c->ready, 1u, __ATOMIC_RELEASE);
  CHECK(r->FindOrAdopt(Handle(55)) == c);
}
