// NCCL's messages without their WARN marker: what users paste.
//
// A WARN line as NCCL prints it ("host:pid:tid [dev] file.cc:NN NCCL WARN
// text") is found by its marker wherever it stands (nccl_log.h). People often
// paste less: NCCL's text alone ("NET/IB : Got completion from peer ... with
// error 12", "Cuda failure 'out of memory'"), with its source location but
// no level ("transport/net_ib.cc:1234 Got completion ..."), cut short, or the
// line PyTorch prints after "Last error:" (ncclGetLastError: NCCL's last WARN
// text). Such a line is read as a WARN line, and every message of the
// catalogue is looked for in it, NCCL's own words too (nccl_only).
//
// The rule: a line is NCCL's when it carries something only NCCL prints, never
// because of the words a catalogue message matches. Generic words ("Invalid
// handle", "unexpected", "not found", "Could not find") stay unmatched in a
// program's traceback. What marks a line as NCCL's:
//   1. it follows a line that ends with PyTorch's "Last error:" (or is the
//      text after "Last error: " on the same line);
//   2. it holds an NCCL source location followed by its text: a lower-case
//      path of NCCL's tree ending in .cc, .cu or .h, a line number, a space
//      ("misc/socket.cc:484 ...", "transport/net_ib.cc:1234 (func) ...");
//      PyTorch's and glog's locations ("[W socket.cpp:663]",
//      "ProcessGroupNCCL.cpp:1269,") and a compiler's ("x.cc:12:5:") do not
//      fit it;
//   3. it holds one of the tags NCCL's own WARN texts open with: its
//      transports' ("NET/IB :", "NET/Socket :", "NET/Plugin", "NET/OFI"),
//      its proxy thread's ("[Proxy Service N]", "[Service thread]"),
//      "P2P/IPC", and its CUDACHECK's "Cuda failure" (CUDA's and PyTorch's
//      own say "CUDA error").
// Rules 2 and 3 take the line only when its text names a message of the
// catalogue or reads as an error: a location or tag followed by anything
// else is left as it was.
//
// Thread-safety: stateless; may be called from any thread.

#ifndef NCCLWATCH_DECODER_LOGS_FRAGMENTS_H_
#define NCCLWATCH_DECODER_LOGS_FRAGMENTS_H_

#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"
#include "knowledge/message_catalogue.h"

namespace ncclwatch::decoder {

struct NcclFragment {
  size_t message_at = 0;                      // where NCCL's text starts in the line
  const CatalogueMessage* message = nullptr;  // FindMessage of that text (nullptr: none)
};

// NCCL's text in a line without a WARN marker, or nullopt when the line is
// not NCCL's. after_last_error: the line before it ended with "Last error:".
std::optional<NcclFragment> FindNcclFragment(absl::string_view line, bool after_last_error);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_LOGS_FRAGMENTS_H_
