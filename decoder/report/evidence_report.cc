// The report of a job's evidence: diagnose's face where traces were read,
// explain's where logs alone were.

#include <sstream>

#include "report/reports.h"
#include "report/terminal_text.h"

namespace ncclwatch::decoder {

void WriteReport(const EvidenceDiagnosis& e, bool json, std::ostream& out) {
  const UnreadableFiles& logs_not_read = e.logs_not_read;
  if (json) {
    if (e.traced()) {
      WriteJsonReport(e.job, e.diagnosis, out, logs_not_read);
    } else {
      WriteExplainJsonReport(e.log, e.diagnosis, logs_not_read, out);
    }
    return;
  }
  std::ostringstream human;
  if (e.traced()) {
    WriteHumanReport(e.job, e.diagnosis, human, logs_not_read);
  } else {
    WriteExplainHumanReport(e.log, e.diagnosis, logs_not_read, human);
  }
  out << TerminalSafe(human.str());
}

}  // namespace ncclwatch::decoder
