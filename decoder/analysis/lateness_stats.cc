#include "analysis/lateness_stats.h"

#include <math.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace ncclwatch::decoder::lateness {

int64_t Quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

namespace {

// The log of the binomial's term C(n, k) p^k (1-p)^(n-k), 0 < p < 1, k <= n.
double LogTerm(uint64_t k, uint64_t n, double p) {
  const double dn = static_cast<double>(n), dk = static_cast<double>(k);
  // lgamma_r: lgamma sets the global signgam, a race between threads.
  int sign = 0;
  return ::lgamma_r(dn + 1, &sign) - ::lgamma_r(dk + 1, &sign) - ::lgamma_r(dn - dk + 1, &sign) +
         dk * std::log(p) + (dn - dk) * std::log1p(-p);
}

}  // namespace

double LogChanceAtLeast(uint64_t k, uint64_t n, double p) {
  // More than n is not a chance, but nothing to name anyone for either:
  // as if certain, so that BeyondChance says no.
  if (k == 0 || k > n || p >= 1) return 0;
  if (p <= 0) return -INFINITY;
  // The terms C(n, j) p^j (1-p)^(n-j), j = k..n, each from the one before
  // (times (n-j)/(j+1) p/(1-p)), in logs, summed as they come relative to
  // the largest so far. They rise to one peak and then only fall: stop once
  // they no longer count.
  const double odds = std::log(p) - std::log1p(-p);
  double term = LogTerm(k, n, p);
  double top = term;
  double sum = 0;  // of exp(term - top)
  for (uint64_t j = k;; ++j) {
    if (term > top) {
      sum *= std::exp(top - term);
      top = term;
    }
    sum += std::exp(term - top);
    if (j == n || term < top - 60) break;
    term += std::log(static_cast<double>(n - j)) - std::log(static_cast<double>(j + 1)) + odds;
  }
  return top + std::log(sum);
}

bool BeyondChance(uint64_t k, uint64_t n, double p, double sigmas) {
  const double chance = std::log(0.5 * std::erfc(sigmas / std::sqrt(2.0)));
  if (k == 0 || k > n || p >= 1) return false;
  if (p <= 0) return true;
  // Two bounds settle nearly every case without the sum (a healthy pair's
  // member, last in about half, is asked once per communicator): the tail
  // holds its first term at least, and at most exp(-n KL(k/n, p)) past
  // the mean (Chernoff).
  if (LogTerm(k, n, p) > chance) return false;
  const double x = static_cast<double>(k) / static_cast<double>(n);
  if (x > p) {
    const double kl = x * std::log(x / p) + (x < 1 ? (1 - x) * std::log((1 - x) / (1 - p)) : 0);
    if (-static_cast<double>(n) * kl <= chance) return true;
  }
  return LogChanceAtLeast(k, n, p) <= chance;
}

bool StandsOut(uint64_t count, uint64_t gapped, int members, double sigmas) {
  if (members < 2 || count < kMinTimesLast || 2 * count < gapped) return false;
  return BeyondChance(count, gapped, 1.0 / members, sigmas);
}

bool StandsOutOrSince(const std::vector<uint8_t>& last, const std::vector<uint8_t>& gapped,
                      int members) {
  auto count = [](const std::vector<uint8_t>& x, size_t from) {
    uint64_t n = 0;
    for (size_t i = from; i < x.size(); ++i) n += x[i] != 0;
    return n;
  };
  if (StandsOut(count(last, 0), count(gapped, 0), members)) return true;
  // The part since is chosen by the data: at least kMinSince collectives
  // long, so that a burst (the scheduler holding a rank back for a few
  // steps) is never judged alone, and held to a higher bar for the choice.
  const size_t began = ChangePoint(last);
  return began > 0 && last.size() - began >= kMinSince &&
         StandsOut(count(last, began), count(gapped, began), members, SinceSigmas(last.size()));
}

double SinceSigmas(size_t splits) {
  const double ways = static_cast<double>(std::max<size_t>(splits, 1));
  return std::sqrt(kSigmas * kSigmas + 2 * std::log(ways));
}

size_t ChangePoint(const std::vector<uint8_t>& x) {
  const size_t n = x.size();
  if (n < 2) return 0;
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  auto sse = [&](size_t a, size_t b) {  // sum of squared error of x[a, b) (x*x == x)
    const double len = static_cast<double>(b - a);
    if (len == 0) return 0.0;
    const double sum = prefix[b] - prefix[a];
    return sum - sum * sum / len;
  };
  double best = sse(0, n);
  size_t at = 0;
  // Each part at least 5 collectives and a twentieth of them (a split that
  // isolates a handful says nothing), and the rate after at least twice the
  // rate before (a change, not noise around one rate).
  const size_t least = std::max<size_t>(5, n / 20);
  for (size_t s = least; s + least <= n; ++s) {
    const double before = (prefix[s] - prefix[0]) / static_cast<double>(s);
    const double after = (prefix[n] - prefix[s]) / static_cast<double>(n - s);
    if (after < 2 * before || after <= before) continue;
    const double e = sse(0, s) + sse(s, n);
    if (e < best - 1e-9) {
      best = e;
      at = s;
    }
  }
  return at;
}

Straggling DateStraggling(const std::vector<uint8_t>& last, const std::vector<int64_t>& gap,
                          int64_t min_gap_ns) {
  Straggling s;
  s.began = ChangePoint(last);
  std::vector<int64_t> early, recent;
  size_t straggling = 0;
  for (size_t i = s.began; i < last.size(); ++i) straggling += last[i];
  size_t seen = 0;
  for (size_t i = s.began; i < last.size(); ++i) {
    if (!last[i]) continue;
    (2 * seen < straggling ? early : recent).push_back(gap[i]);
    ++seen;
  }
  s.early_late_ns = Quantile(early, 0.5);
  s.recent_late_ns = Quantile(recent, 0.5);
  s.worsening = early.size() >= kMinTimesLast / 2 && recent.size() >= kMinTimesLast / 2 &&
                s.recent_late_ns >= s.early_late_ns + s.early_late_ns / 2 &&
                s.recent_late_ns - s.early_late_ns >= min_gap_ns;
  std::vector<int64_t> all = std::move(early);
  all.insert(all.end(), recent.begin(), recent.end());
  s.late_ns = Quantile(std::move(all), 0.5);
  return s;
}

bool Persists(const std::vector<uint8_t>& last, size_t began) {
  if (began >= last.size()) return false;
  uint64_t count = 0;
  for (size_t i = began; i < last.size(); ++i) count += last[i] != 0;
  return count >= kMinTimesLast && 3 * count >= last.size() - began;
}

CallLast MostOftenLast(const std::vector<uint32_t>& calls, const std::vector<uint8_t>& last) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_call;  // call -> (last, compared)
  for (size_t i = 0; i < calls.size() && i < last.size(); ++i) {
    ++by_call[calls[i]].second;
    if (last[i]) ++by_call[calls[i]].first;
  }
  CallLast out;
  for (const auto& [call, c] : by_call) {
    if (c.first > out.times_last) out = {call, c.first, c.second};
  }
  return out;
}

Window DescribeWindow(const std::vector<uint64_t>& seqs, bool from_start,
                      const std::vector<uint8_t>& last, const std::vector<int64_t>& gap,
                      int64_t min_gap_ns) {
  Window w;
  w.first_seq = seqs.front();
  w.last_seq = seqs.back();
  w.window_start = !from_start || w.first_seq != 0;
  std::vector<int64_t> late;
  for (size_t i = 0; i < last.size(); ++i)
    if (last[i]) late.push_back(gap[i]);
  w.median_late_ns = Quantile(late, 0.5);
  w.p90_late_ns = Quantile(late, 0.9);
  const Straggling dated = DateStraggling(last, gap, min_gap_ns);
  w.since_late_ns = dated.late_ns;
  w.began = dated.began;
  w.began_seq = seqs[dated.began];
  w.began_later = dated.began > 0;
  w.early_late_ns = dated.early_late_ns;
  w.recent_late_ns = dated.recent_late_ns;
  w.worsening = dated.worsening;
  w.persists = Persists(last, dated.began);
  return w;
}

void SetWindow(const Window& w, StragglerEvidence* x) {
  x->first_seq = w.first_seq;
  x->last_seq = w.last_seq;
  x->window_start = w.window_start;
  x->median_late_ns = w.median_late_ns;
  x->p90_late_ns = w.p90_late_ns;
  x->began_seq = w.began_seq;
  x->began_later = w.began_later;
  x->early_late_ns = w.early_late_ns;
  x->recent_late_ns = w.recent_late_ns;
  x->worsening = w.worsening;
}

}  // namespace ncclwatch::decoder::lateness
