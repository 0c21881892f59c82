// CallDigest: a collective's signature, as NCCL matches it across ranks,
// folded into 64 bits with its sequence number, for the blocks of calls a
// node's summary leaves out (model/left_out_calls.h).
//
// A block's digest is the sum (mod 2^64) of its calls' digests: the order
// the calls are added in does not matter, and two ranks whose calls in a
// block agree on every number (the operation, count, datatype, reduction
// and root: findings/collective_signature.h, what the collective alignment
// compares) have equal digests. Two that differ at any number have equal
// digests only by a 64-bit collision (about 2^-64 for calls that were not
// crafted to collide).
//
// Thread-safety: pure functions.

#ifndef NCCLWATCH_DECODER_SUMMARY_CALL_DIGEST_H_
#define NCCLWATCH_DECODER_SUMMARY_CALL_DIGEST_H_

#include <algorithm>
#include <cstdint>

#include "findings/collective_signature.h"
#include "model/left_out_calls.h"
#include "model/process_trace.h"

namespace ncclwatch::decoder {

// splitmix64's finaliser: every input bit reaches every output bit.
inline uint64_t MixDigest(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Two words folded into one: their 128-bit product's halves, xored. Every
// bit of either reaches the middle bits of the product; it is 0 when either
// is, so each caller xors its words with constants no real value equals.
inline uint64_t FoldDigest(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// One call's digest: its number with its count, and its four small numbers
// packed two to a word (each in 32 bits of its own, so no two signatures
// pack alike), folded in two independent pairs, then mixed together: the
// number stays bound to the signature (two calls that trade signatures
// within a block change its sum), and the two folds run side by side (this
// is on every kept call of a summary's reading: two products and one mix in
// a chain, where there were six mixes). Summary format 7 on
// (summary/summary_format.h).
inline uint64_t CallDigest(uint64_t seq, const CollectiveSignature& sig) {
  const uint64_t kinds = (uint64_t{sig.call} << 32) | static_cast<uint32_t>(sig.datatype);
  const uint64_t roles =
      (uint64_t{static_cast<uint32_t>(sig.redop)} << 32) | static_cast<uint32_t>(sig.root);
  const uint64_t numbers =
      FoldDigest(seq ^ 0x6e63636c77617463ull, sig.count ^ 0xa0761d6478bd642full);
  const uint64_t signature =
      FoldDigest(kinds ^ 0xe7037ed1a0b428dbull, roles ^ 0x8ebc6af09c88c6e3ull);
  return MixDigest(numbers ^ signature);
}

// One send's or receive's digest without its count of the collectives
// before it: its number (per communicator, peer and direction), count and
// datatype, what NCCL requires a send and its receive to agree on.
inline uint64_t P2pSignatureDigest(uint64_t seq, uint64_t count, int32_t datatype) {
  uint64_t h = MixDigest(seq ^ 0x6e63636c70327070ull);
  h = MixDigest(h ^ count);
  return MixDigest(h ^ static_cast<uint32_t>(datatype));
}

// Its digest with how many collectives of the communicator its rank had
// issued before it (CommStream::collectives_before_p2p), where both sides
// must agree too, folded into `signature` (P2pSignatureDigest): 0 stands
// for none and for not known (-1), as the matching compares only known
// counts (analysis/p2p_matching.h). Summary format 8 on.
inline uint64_t P2pDigestOf(uint64_t signature, int64_t collectives_before) {
  return collectives_before > 0 ? MixDigest(signature ^ static_cast<uint64_t>(collectives_before))
                                : signature;
}
inline uint64_t P2pDigest(uint64_t seq, uint64_t count, int32_t datatype,
                          int64_t collectives_before) {
  return P2pDigestOf(P2pSignatureDigest(seq, count, datatype), collectives_before);
}

// One send or receive added to its block's digests (LeftOutP2p), its count
// of collectives before as the model settles it (-1: not known).
inline void AddP2pCall(uint64_t seq, uint64_t count, int32_t datatype, int64_t collectives_before,
                       P2pBlockDigest* block) {
  const uint64_t signature = P2pSignatureDigest(seq, count, datatype);
  block->signature += signature;
  block->digest += P2pDigestOf(signature, collectives_before);
  block->unknown += collectives_before < 0 ? 1 : 0;
}

// The collectives of stream `s` of `t` digested by block (KeptBlocks):
// its lowest and highest numbers, and each run of calls in one block summed
// as the calls come (in number order, but for what a crafted trace holds).
inline KeptBlocks DigestKeptCalls(const ProcessTrace& t, const CommStream& s) {
  KeptBlocks m;
  uint64_t block = UINT64_MAX, digest = 0, calls = 0;
  auto flush = [&] {
    if (calls == 0) return;
    m.blocks.push_back({block, digest, calls});
    digest = calls = 0;
  };
  for (uint32_t i : s.collectives) {
    const CollectiveEvent& e = t.collectives[i];
    if (!m.any) {
      m.any = true;
      m.lo = m.hi = e.seq;
    }
    m.lo = std::min(m.lo, e.seq);
    m.hi = std::max(m.hi, e.seq);
    if (e.seq / kLeftOutBlock != block) {
      flush();
      block = e.seq / kLeftOutBlock;
    }
    digest += CallDigest(e.seq, CollectiveSignature::Of(e));
    ++calls;
  }
  flush();
  return m;
}

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_SUMMARY_CALL_DIGEST_H_
