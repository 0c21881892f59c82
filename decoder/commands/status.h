// ncclwatch status PATH... [--watch] [--interval S] [--stuck-after S]
//                         [--metrics FILE|-] [--on-problem CMD]: the
// live state of a running job from its traces (report/status_report.h): per
// communicator, each rank's last entered and last completed collective, how
// long since its last progress and heartbeat, which ranks lag, any stall or
// asynchronous error. --watch redraws it in place every S seconds (default
// 2) like top, until interrupted.
//
// --metrics FILE also writes the status as metrics (report/status_metrics.h)
// into FILE, replaced whole each time (node_exporter's textfile collector
// reads FILE.prom files); with `-` the metrics go to standard output instead
// of the table. The job label is the traces' job id, else the first PATH's
// name.
//
// --on-problem CMD: when the job is stuck or ended badly, the traces are
// diagnosed as `diagnose` does, and if that is a problem CMD runs once
// (commands/on_problem.h), and is waited for; with --watch the look that
// first finds one runs it.
//
// Exit codes: 0 everything progresses, 1 something is stuck, 2 input that
// cannot be used.

#ifndef NCCLWATCH_DECODER_COMMANDS_STATUS_H_
#define NCCLWATCH_DECODER_COMMANDS_STATUS_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// `args`: what follows `ncclwatch status`.
int RunStatus(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_COMMANDS_STATUS_H_
