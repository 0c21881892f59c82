// jobrun: a tiny torchrun for the tests and the demo.
//
//   jobrun -n 8 [--timeout 60] [--shm-size 16m] [--memlock BYTES] [--env-rank R:KEY=VALUE]...
//          [--netns-rank R:NAME]... [--env KEY=VALUE]... -- program args...
//
// Starts N ranks of the program with RANK, WORLD_SIZE, LOCAL_RANK and a
// rendezvous folder set, prints their output line by line tagged with the
// rank, and exits with the first non-zero rank status (124 if it had to kill
// ranks at the timeout).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/job_launcher.h"

namespace {

int Usage(const char* msg) {
  std::fprintf(stderr, "jobrun: %s\n", msg);
  std::fprintf(stderr,
               "usage: jobrun -n N [--timeout S] [--shm-size SIZE] [--memlock BYTES] [--env "
               "KEY=VAL] [--env-rank R:KEY=VAL]\n"
               "              [--netns-rank R:NAME] -- program [args...]\n");
  return 2;
}

bool SplitRank(const std::string& arg, int* rank, std::string* rest) {
  size_t colon = arg.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  char* end = nullptr;
  long r = std::strtol(arg.c_str(), &end, 10);
  if (end != arg.c_str() + colon || r < 0) return false;
  *rank = static_cast<int>(r);
  *rest = arg.substr(colon + 1);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  jobs::JobSpec spec;
  spec.echo = true;
  spec.tag_output = true;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jobrun: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n" || a == "--nproc") {
      spec.nranks = std::atoi(value("-n").c_str());
    } else if (a == "--timeout") {
      spec.timeout_s = std::atof(value("--timeout").c_str());
    } else if (a == "--shm-size") {
      spec.shm_size = value("--shm-size");
    } else if (a == "--memlock") {
      spec.memlock_bytes = std::atoll(value("--memlock").c_str());
    } else if (a == "--env") {
      spec.env.push_back(value("--env"));
    } else if (a == "--env-rank" || a == "--netns-rank") {
      int r;
      std::string rest;
      if (!SplitRank(value(a.c_str()), &r, &rest)) return Usage("expected R:VALUE");
      if (a == "--env-rank")
        spec.ranks[r].env.push_back(rest);
      else
        spec.ranks[r].netns = rest;
    } else if (a == "--no-tag") {
      spec.tag_output = false;
    } else {
      return Usage(("unknown option " + a).c_str());
    }
  }
  if (i >= argc) return Usage("no program given after --");
  if (spec.nranks < 1 || spec.nranks > 1024) return Usage("-n must be between 1 and 1024");
  for (; i < argc; ++i) spec.argv.push_back(argv[i]);

  jobs::JobResult r = jobs::RunJob(spec);
  if (!r.error.empty()) {
    std::fprintf(stderr, "jobrun: %s\n", r.error.c_str());
    return 2;
  }
  int status = 0;
  for (const jobs::RankResult& rr : r.ranks) {
    if (rr.killed_at_timeout) {
      std::fprintf(stderr, "jobrun: rank %d still running after %.0f s: killed\n", rr.rank,
                   spec.timeout_s);
    } else if (rr.signal != 0) {
      std::fprintf(stderr, "jobrun: rank %d died of signal %d (%s)\n", rr.rank, rr.signal,
                   strsignal(rr.signal));
      if (status == 0) status = 128 + rr.signal;
    } else if (rr.exit_code != 0) {
      std::fprintf(stderr, "jobrun: rank %d exited with status %d\n", rr.rank, rr.exit_code);
      if (status == 0) status = rr.exit_code;
    }
  }
  return r.timed_out ? 124 : status;
}
