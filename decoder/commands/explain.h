// `ncclwatch explain [--json] LOG...`: the same findings as `diagnose`, from
// plain NCCL_DEBUG logs and a job's error output, for jobs that ran without
// the shim (files, or folders of them; ranks interleaved or one file each):
// diagnose's pipeline (analysis/diagnose_evidence.h) with logs alone.

#ifndef NCCLWATCH_DECODER_COMMANDS_EXPLAIN_H_
#define NCCLWATCH_DECODER_COMMANDS_EXPLAIN_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// Exit code: 0 nothing wrong found, 1 a problem, 2 nothing usable in the input.
int RunExplain(const std::vector<std::string>& paths, bool json, std::ostream& out,
               std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_EXPLAIN_H_
