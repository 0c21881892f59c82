// The words of a straggler finding (analysis/arrival_skew.h, gpu_skew.h,
// link_skew.h): how often a rank came last (or its link was slow), by how
// much, of what, since when, and whether it worsens.

#ifndef NCCLWATCH_DECODER_REPORT_STRAGGLER_TEXT_H_
#define NCCLWATCH_DECODER_REPORT_STRAGGLER_TEXT_H_

#include <string>

#include "findings/finding.h"

namespace ncclwatch::decoder {

// "rank 2 enqueued last in 57 of 60 AllReduces of communicator 3fa9c1 ..."
std::string RenderStraggler(const Finding& f, const StragglerFacts& x);
// Its median lateness, for a reader: "21 ms", "1.4 s".
std::string StragglerLate(const StragglerFacts& x);
// Who a slow link's finding names: "rank 5", "ranks 4 and 5".
std::string LinkRanks(const StragglerFacts& x);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_STRAGGLER_TEXT_H_
