// Synthetic traces for the decoder benchmarks: what the shim would write for
// a job of `ranks` processes that each issue `calls` AllReduces on one world
// communicator, written with the shim's own ring writer and wire encoder so
// the decoder reads exactly the bytes it reads in production.

#ifndef NCCLWATCH_TESTS_BENCH_SYNTHETIC_TRACE_H_
#define NCCLWATCH_TESTS_BENCH_SYNTHETIC_TRACE_H_

#include <stdint.h>

#include <string>

namespace ncclwatch::bench {

struct SyntheticJob {
  int ranks = 8;
  uint64_t calls = 1000;       // collectives per rank
  int diverging_rank = -1;     // this rank calls with a different count...
  uint64_t diverging_seq = 0;  // ...at this sequence number
  // Collectives as call slots (format 2, what the shim writes now), or as
  // protobuf Records (what format 1's shim wrote; the decoder reads both).
  bool call_slots = true;
  // Only the ranks [first_rank, end_rank) of the job (one node's, say);
  // end_rank -1: to the last.
  int first_rank = 0;
  int end_rank = -1;
  // The ranks' calls per rank where they differ: rank `short_rank` stops
  // after `short_calls` collectives (a rank that stopped; -1: none).
  int short_rank = -1;
  uint64_t short_calls = 0;
  // With `killed`, rank `short_rank` was SIGKILLed after its short_calls
  // collectives (no end in its trace), and the others wait in collective
  // #short_calls (pending) until the launcher kills them too (no end).
  bool killed = false;
  // The ranks' clocks: every rank's collectives from one start (monotonic
  // and realtime nanoseconds; 0: now, as each rank is written), 1 ms apart,
  // each rank's enqueue a few hundred microseconds off at random (seeded by
  // rank and number), and rank `slow_rank` `slow_ns` late in every one (a
  // straggler). Without `start_ns`, 1 us apart from when each is written.
  uint64_t start_ns = 0;
  uint64_t start_realtime_ns = 0;
  int slow_rank = -1;
  uint64_t slow_ns = 0;
  // A GpuTime record after each collective (the watcher's: its GPU took
  // 0.5 ms, from its enqueue on; with call slots only).
  bool gpu_times = false;
  // ...as a GPU-time slot (format 4, what the shim writes now), or as a
  // protobuf Record (what format 3's shim wrote; the decoder reads both). A
  // file without GPU-time slots is marked format 3, for an ncclwatch from
  // before format 4, side by side.
  bool gpu_time_slots = true;
  // After each collective, a send to the next rank and a receive from the
  // one before (call slots only), numbered per peer and direction as the
  // shim numbers them; the killed job's waiting ranks' last are pending.
  bool sends = false;
  // ...on every `sends_every`-th step only (a pipeline stage's sends come
  // once in several collectives).
  uint64_t sends_every = 1;
  // Collectives on the steps before this one only; the steps after make
  // their sends and receives alone (a communicator its pipeline stages
  // pass activations on, after a first barrier or two).
  uint64_t collectives_until = UINT64_MAX;
  // An Inventory record per rank, as the shim writes at its first init: the
  // node's environment with the rank's own RANK and LOCAL_RANK, NCCL's
  // version and path, its GPU.
  bool inventory = false;
  // Rank `gap_rank`'s trace lacks collectives [gap_first, gap_first +
  // gap_calls) and their sends: what a ring that wrapped while a hold kept an
  // older call leaves (the calls were made, their slots written over).
  int gap_rank = -1;
  uint64_t gap_first = 0;
  uint64_t gap_calls = 0;
  // A Progress record every `progress_every` steps (the watcher's: every
  // operation so far completed on the GPU, every 20 ms), so that a summary
  // leaves the sends before it out.
  bool progress = false;
  uint64_t progress_every = 64;  // steps (at least 1)
  // The ring's size (a power of two); 0: the smallest that holds every call.
  // Smaller, the ring wraps and keeps the newest, as a real one does.
  uint64_t ring_bytes = 0;
  // Every claim from a block of 256 slots (ring_writer.h), as a thread that
  // contends at speed takes them: the trace is read back in time order
  // (trace/time_order.h), not in claim order.
  bool claim_blocks = false;
};

// Writes one trace per rank into `dir` (which must exist). Returns false and
// sets `error` on failure.
bool WriteSyntheticJob(const std::string& dir, const SyntheticJob& job, std::string* error);

}  // namespace ncclwatch::bench

#endif  // NCCLWATCH_TESTS_BENCH_SYNTHETIC_TRACE_H_
