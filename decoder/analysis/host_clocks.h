// HostClocks: how far each host's clock is from the job's reference host,
// measured by the job itself, and how well.
//
// The analyses that ask "who came last" (arrival_skew.h, gpu_skew.h)
// compare times taken on different hosts, each on its own CLOCK_REALTIME:
// NTP keeps those within milliseconds of each other at best, and a host
// whose clock runs 30 ms ahead would have every one of its ranks come
// "last" by 30 ms. The job carries its own alignment: a collective finishes
// on all its members at almost the same moment (none can finish before the
// last has brought its data; the rest finish within a hop's latency of it),
// and the shim records when each member's GPU finished it (GpuTime, its
// CLOCK_MONOTONIC end on the host's realtime through the trace's anchor).
//
// Per host, the end of its latest kPerComm timed collectives of each
// communicator is kept (the first of its members to report one: members on
// one host share its clock). Per collective two hosts finished, the
// difference of their ends is one sample of their offset; in a collective of
// many hosts each is paired with the lowest-named host in it (a star, not
// every pair: 16,384 hosts are 16,384 pairs, not 134 million). A pair's
// offset is the median of its samples, its residual the 90th percentile of
// the samples' distance from that median; a pair with fewer than
// kMinSamples is not used. From the reference host (the lowest-named), each
// host is reached over pairs, lowest-named first: its offset is the sum
// along the way, its residual the sum of the pairs' residuals. A host no
// pair reaches keeps its clock as it was, and says so (`aligned` false).
// A difference beyond kMaxOffsetNs (a crafted trace, or a clock years off)
// is no sample.
//
//   host b's clock read 30 ms ahead: every end of b is 30 ms after a's
//   samples b - a: 30.01, 29.98, 30.02, ... ms -> offset 30.0 ms, residual 20 us
//   arrival_skew then compares b's enqueues 30 ms earlier than they read.
//
// Thread-safety: none; one analysis owns it.

#ifndef NCCLWATCH_DECODER_ANALYSIS_HOST_CLOCKS_H_
#define NCCLWATCH_DECODER_ANALYSIS_HOST_CLOCKS_H_

#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/process_trace.h"

namespace ncclwatch::decoder {

class HostClocks {
 public:
  static constexpr size_t kPerComm = 64;
  static constexpr size_t kMinSamples = 3;
  static constexpr int64_t kMaxOffsetNs = 24LL * 3600 * 1'000'000'000;

  struct Host {
    std::string name;
    bool aligned = false;     // the reference, or reached over pairs
    int64_t offset_ns = 0;    // how far ahead of the reference its clock reads
    int64_t residual_ns = 0;  // the offset's error, as the samples spread (90th percentile)
    size_t processes = 0;
  };

  void AddProcess(int index, const ProcessTrace& t);
  // After the last process.
  void Solve();

  // The job's hosts, by name; the first is the reference.
  const std::vector<Host>& hosts() const { return hosts_; }
  // What to subtract from process `index`'s realtime to put it on the
  // reference host's clock (0: the reference, a host not aligned, or a
  // process not added).
  int64_t OffsetOf(int index) const;
  // `ns` less `offset`, saturated (a crafted trace's times may sit at the
  // ends of the range); INT64_MIN, "unknown" to the analyses, stays so.
  static int64_t OnReference(int64_t ns, int64_t offset) {
    int64_t out;
    if (ns == INT64_MIN) return ns;
    if (__builtin_sub_overflow(ns, offset, &out)) return offset > 0 ? INT64_MIN + 1 : INT64_MAX;
    return out == INT64_MIN ? INT64_MIN + 1 : out;
  }

  // The hosts of `processes`: how many, whether every one was aligned, and
  // how far apart two of their aligned times may still be (the two largest
  // residuals added).
  struct Among {
    int hosts = 0;
    bool aligned = true;
    int64_t residual_ns = 0;
  };
  Among Of(const std::vector<int>& processes) const;

 private:
  // Per host: communicator -> collective number -> when it finished there.
  std::map<std::string, std::map<uint64_t, std::map<uint64_t, int64_t>>> ends_;
  std::map<int, std::string> host_of_;  // process -> host
  std::vector<Host> hosts_;
  std::map<std::string, size_t> index_;  // host -> hosts_
};

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_ANALYSIS_HOST_CLOCKS_H_
