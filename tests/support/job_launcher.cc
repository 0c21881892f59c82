#include "support/job_launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace jobs {
namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

std::string ResolveCommand(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t colon = p.find(':', pos);
    if (colon == std::string::npos) colon = p.size();
    std::string candidate = p.substr(pos, colon - pos) + "/" + cmd;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = colon + 1;
  }
  return cmd;
}

// A process that holds a private mount namespace with a small /dev/shm for
// as long as `keepalive` stays open; ranks join it with setns(2).
struct ShmNamespace {
  pid_t pid = -1;
  int ns_fd = -1;
  int keepalive = -1;

  std::string Create(const std::string& size) {
    int status_pipe[2], keep_pipe[2];
    if (pipe2(status_pipe, O_CLOEXEC) != 0 || pipe2(keep_pipe, O_CLOEXEC) != 0)
      return strerror(errno);
    pid = fork();
    if (pid == 0) {
      close(status_pipe[0]);
      close(keep_pipe[1]);
      const std::string opts = "size=" + size + ",mode=1777";
      const char* err = nullptr;
      if (unshare(CLONE_NEWNS) != 0) {
        err = "unshare(CLONE_NEWNS) failed (needs root)";
      } else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        err = "making / private failed";
      } else if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
        err = "mounting a tmpfs on /dev/shm failed";
      }
      const char* msg = err ? err : "ok";
      (void)!write(status_pipe[1], msg, std::strlen(msg));
      close(status_pipe[1]);
      if (err) _exit(1);
      char c;
      while (read(keep_pipe[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(status_pipe[1]);
    close(keep_pipe[0]);
    keepalive = keep_pipe[1];
    char buf[128] = {0};
    ssize_t n = read(status_pipe[0], buf, sizeof(buf) - 1);
    close(status_pipe[0]);
    if (n <= 0 || std::strcmp(buf, "ok") != 0) return n > 0 ? buf : "the namespace holder died";
    ns_fd = open(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) return std::string("cannot open the mount namespace: ") + strerror(errno);
    return "";
  }

  ~ShmNamespace() {
    if (ns_fd >= 0) close(ns_fd);
    if (keepalive >= 0) close(keepalive);
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
};

void Echo(const std::string& chunk, int rank, bool tag, std::string* pending) {
  if (!tag) {
    fwrite(chunk.data(), 1, chunk.size(), stdout);
    fflush(stdout);
    return;
  }
  *pending += chunk;
  size_t nl;
  while ((nl = pending->find('\n')) != std::string::npos) {
    std::printf("[rank %d] %s\n", rank, pending->substr(0, nl).c_str());
    pending->erase(0, nl + 1);
  }
  fflush(stdout);
}

}  // namespace

std::string SimLibDir() {
  const char* v = std::getenv("NCCLSIM_DIR");
#ifdef NCCLSIM_DIR_DEFAULT
  return v ? v : NCCLSIM_DIR_DEFAULT;
#else
  return v ? v : "";
#endif
}

std::string BinDir() {
  const char* v = std::getenv("NCCLWATCH_BIN_DIR");
#ifdef NCCLWATCH_BIN_DIR_DEFAULT
  return v ? v : NCCLWATCH_BIN_DIR_DEFAULT;
#else
  return v ? v : "";
#endif
}

JobResult RunJob(const JobSpec& spec) {
  JobResult result;
  if (spec.argv.empty() || spec.nranks < 1) {
    result.error = "no command or no ranks";
    return result;
  }
  char tmpl[] = "/tmp/jobrun-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    result.error = std::string("mkdtemp: ") + strerror(errno);
    return result;
  }
  result.rendezvous_dir = tmpl;

  ShmNamespace shm;
  if (!spec.shm_size.empty()) {
    std::string err = shm.Create(spec.shm_size);
    if (!err.empty()) {
      result.error = "cannot give the job a " + spec.shm_size + " /dev/shm: " + err;
      std::filesystem::remove_all(result.rendezvous_dir);
      return result;
    }
  }

  // Everything the children need is built before fork: after it, a child of a
  // threaded process may only make async-signal-safe calls.
  const std::string path = ResolveCommand(spec.argv[0]);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  struct Child {
    std::vector<std::string> env_store;
    std::vector<char*> envp;
    int netns_fd = -1;
    std::string hostname;
    int out = -1;
    std::string pending;
  };
  std::vector<Child> children(spec.nranks);
  result.ranks.resize(spec.nranks);
  for (int r = 0; r < spec.nranks; ++r) {
    Child& c = children[r];
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    env["RANK"] = std::to_string(r);
    env["WORLD_SIZE"] = std::to_string(spec.nranks);
    env["LOCAL_RANK"] = std::to_string(r);
    env["LOCAL_WORLD_SIZE"] = std::to_string(spec.nranks);
    env["JOBRUN_RENDEZVOUS"] = result.rendezvous_dir;
    auto apply = [&env](const std::vector<std::string>& list) {
      for (const std::string& kv : list) {
        size_t eq = kv.find('=');
        if (eq != std::string::npos)
          env[kv.substr(0, eq)] = kv.substr(eq + 1);
        else
          env.erase(kv);  // a bare name unsets the variable
      }
    };
    apply(spec.env);
    auto it = spec.ranks.find(r);
    if (it != spec.ranks.end()) {
      apply(it->second.env);
      c.hostname = it->second.hostname;
      if (!it->second.netns.empty()) {
        c.netns_fd = open(("/var/run/netns/" + it->second.netns).c_str(), O_RDONLY | O_CLOEXEC);
        if (c.netns_fd < 0) {
          result.error = "no network namespace '" + it->second.netns + "': " + strerror(errno);
        }
      }
    }
    for (auto& kv : env) c.env_store.push_back(kv.first + "=" + kv.second);
    for (auto& s : c.env_store) c.envp.push_back(const_cast<char*>(s.c_str()));
    c.envp.push_back(nullptr);
  }
  if (!result.error.empty()) {
    for (Child& c : children)
      if (c.netns_fd >= 0) close(c.netns_fd);
    std::filesystem::remove_all(result.rendezvous_dir);
    return result;
  }

  std::error_code cwd_error;
  const std::string cwd = std::filesystem::current_path(cwd_error).string();
  for (int r = 0; r < spec.nranks; ++r) {
    Child& c = children[r];
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      result.error = std::string("pipe: ") + strerror(errno);
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      // Joining a mount namespace moves the working folder to its root:
      // come back, so relative paths work as they do without --shm-size.
      if (shm.ns_fd >= 0 && (setns(shm.ns_fd, CLONE_NEWNS) != 0 || chdir(cwd.c_str()) != 0))
        _exit(126);
      if (c.netns_fd >= 0 && setns(c.netns_fd, CLONE_NEWNET) != 0) _exit(126);
      if (!c.hostname.empty() &&
          (unshare(CLONE_NEWUTS) != 0 || sethostname(c.hostname.data(), c.hostname.size()) != 0))
        _exit(126);
      rlimit core;
      if (getrlimit(RLIMIT_CORE, &core) == 0 && core.rlim_cur != 0) {
        core.rlim_cur = 0;
        setrlimit(RLIMIT_CORE, &core);
      }
      if (spec.memlock_bytes >= 0) {
        const rlimit limit{static_cast<rlim_t>(spec.memlock_bytes),
                           static_cast<rlim_t>(spec.memlock_bytes)};
        if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0 ||
            prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0)
          _exit(126);
      }
      if (spec.fsize_bytes >= 0) {
        const rlimit limit{static_cast<rlim_t>(spec.fsize_bytes),
                           static_cast<rlim_t>(spec.fsize_bytes)};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
      }
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      execve(path.c_str(), argv.data(), c.envp.data());
      const char msg[] = "jobrun: cannot execute the command\n";
      (void)!write(2, msg, sizeof(msg) - 1);
      _exit(127);
    }
    close(fds[1]);
    c.out = fds[0];
    result.ranks[r].rank = r;
    result.ranks[r].pid = pid;
    if (pid > 0) setpgid(pid, pid);
  }
  for (Child& c : children)
    if (c.netns_fd >= 0) close(c.netns_fd);

  double deadline = NowS() + spec.timeout_s;
  int running = 0;
  for (const RankResult& rr : result.ranks) running += rr.pid > 0 ? 1 : 0;
  double all_exited_at = -1;
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<int> who;
    for (int r = 0; r < spec.nranks; ++r) {
      if (children[r].out >= 0) {
        pfds.push_back({children[r].out, POLLIN, 0});
        who.push_back(r);
      }
    }
    if (pfds.empty() && running == 0) break;
    if (!pfds.empty())
      poll(pfds.data(), pfds.size(), 50);
    else
      usleep(50000);
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      ssize_t n = read(pfds[i].fd, buf, sizeof(buf));
      Child& c = children[who[i]];
      if (n > 0) {
        std::string chunk(buf, static_cast<size_t>(n));
        result.ranks[who[i]].output += chunk;
        if (spec.echo) Echo(chunk, who[i], spec.tag_output, &c.pending);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(c.out);
        c.out = -1;
      }
    }
    for (RankResult& rr : result.ranks) {
      if (rr.pid <= 0 || rr.exited || rr.signal != 0) continue;
      int status = 0;
      if (waitpid(rr.pid, &status, WNOHANG) == rr.pid) {
        if (WIFEXITED(status)) {
          rr.exited = true;
          rr.exit_code = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
          rr.signal = WTERMSIG(status);
        }
        --running;
        const bool failed = rr.signal != 0 || rr.exit_code != 0;
        if (failed && spec.teardown_after_failure_s >= 0 && !result.timed_out)
          deadline = std::min(deadline, NowS() + spec.teardown_after_failure_s);
      }
    }
    if (running == 0) {
      // Output still held open by a rank's own children is not waited for long.
      if (all_exited_at < 0) all_exited_at = NowS();
      if (NowS() - all_exited_at > 1.0) break;
    }
    if (spec.end_now != nullptr && spec.end_now->load()) deadline = std::min(deadline, NowS());
    if (running > 0 && NowS() > deadline) {
      // A scheduler's way: SIGTERM, a grace period, then SIGKILL.
      const bool first = !result.timed_out;
      result.timed_out = true;
      const bool grace_over = NowS() > deadline + spec.term_grace_s;
      for (RankResult& rr : result.ranks) {
        if (rr.pid <= 0 || rr.exited || rr.signal != 0) continue;
        rr.killed_at_timeout = true;
        if (first) killpg(rr.pid, spec.kill_at_timeout ? SIGKILL : SIGTERM);
        if (grace_over) killpg(rr.pid, SIGKILL);
      }
    }
  }
  for (Child& c : children) {
    if (c.out >= 0) close(c.out);
    if (spec.echo && spec.tag_output && !c.pending.empty())
      Echo("\n", static_cast<int>(&c - &children[0]), true, &c.pending);
  }
  std::error_code ec;
  std::filesystem::remove_all(result.rendezvous_dir, ec);
  return result;
}

LiveJob::LiveJob(const JobSpec& spec) : spec_(spec) {
  spec_.end_now = &end_now_;
  thread_ = std::thread([this] { result_ = RunJob(spec_); });
}

LiveJob::~LiveJob() { End(); }

const JobResult& LiveJob::End() {
  end_now_ = true;
  return Wait();
}

const JobResult& LiveJob::Wait() {
  if (thread_.joinable()) thread_.join();
  return result_;
}

}  // namespace jobs
