// ncclwatch run [--dir D] [--on-stall] [--on-problem CMD] [--shim PATH] -- CMD...:
// runs a job with the shim, and diagnoses it when it goes wrong.
//
// CMD (torchrun, srun, mpirun, a container entrypoint, the program itself)
// runs with libncclwatch.so in front of LD_PRELOAD and NCCLWATCH_DIR set, so
// it and every process it starts are traced with nothing else to change. The
// shim is the one installed with this ncclwatch: next to the binary, or in
// ../lib, ../lib64 or ../lib/ncclwatch (or --shim PATH). The traces go to D,
// or by default to a fresh folder ncclwatch-run-YYYYmmdd-HHMMSS in the
// working folder (on a cluster, usually a shared file system).
//
// CMD keeps the terminal: it stays in ncclwatch's process group, its output
// and the shim's one-line stall warnings (stderr) go straight to the
// terminal. Signals sent to ncclwatch (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGUSR1, SIGUSR2) are passed on to CMD; those a terminal sends reach the
// whole foreground group, CMD included, and are not sent twice.
//
// It prints the diagnosis (the analysis of `diagnose`, root cause first) on
// stderr when CMD fails, when it is interrupted (before the signal is passed
// on, while the processes can still be inspected), and with --on-stall when a
// trace first reports a stall (the folder is read every second, or less
// often for a job whose traces take long to read; the job runs on). With
// --on-problem, the first of those diagnoses that is a problem starts that
// command once (commands/on_problem.h: the JSON report on its stdin, the
// culprits in its environment); ncclwatch goes on passing signals while it
// runs, and waits for it before exiting. It exits with CMD's exit
// status, 128+N when a signal N ended it (as a shell does), 127 when CMD cannot be run, 2 for bad
// usage.
//
// Thread-safety: blocks those signals in the calling process; call once.

#ifndef NCCLWATCH_DECODER_RUN_RUN_H_
#define NCCLWATCH_DECODER_RUN_RUN_H_

#include <ostream>
#include <string>
#include <vector>

namespace ncclwatch::decoder {

// `args`: what follows `ncclwatch run`.
int RunRun(const std::vector<std::string>& args, std::ostream& err);

// The shim installed with this ncclwatch, or "" (the places above).
std::string FindShim();

}  // namespace ncclwatch::decoder

#endif  // NCCLWATCH_DECODER_RUN_RUN_H_
