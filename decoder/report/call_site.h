// Names a call site: "libtorch_cuda.so+0x1a2b3c (c10d::ProcessGroupNCCL::allreduce)".
//
// The address is placed in the module the process had loaded there (its
// module map is in the trace); the symbol comes from the module's ELF symbol
// tables (.symtab, else .dynsym) when the file is readable on this machine,
// demangled. Symbol tables are read once per module and cached.
//
// Thread-safety: not thread-safe (the cache).

#ifndef NCCLWATCH_DECODER_REPORT_CALL_SITE_H_
#define NCCLWATCH_DECODER_REPORT_CALL_SITE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/job_analysis.h"
#include "model/process_trace.h"
#include "report/finding_text.h"

namespace ncclwatch::decoder {

// `address` is a return address in the caller: the call is just before it.
std::string CallSite(const std::vector<ModuleInfo>& modules, uint64_t address);

// Names the call sites of a diagnosis from its processes' module maps; an
// unknown process is "an unknown call site". Holds `job` by reference.
CallSiteNamer TraceCallSites(const JobAnalysis& job);

// The function containing `vaddr` in the ELF file at `path`, demangled; "" if unknown.
std::string SymbolAt(const std::string& path, uint64_t vaddr);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_REPORT_CALL_SITE_H_
