// The folder walk every command reads its inputs with
// (decoder/commands/input_files.h): which links inside a folder it follows,
// what it says it skipped, its bounds, and pseudo file systems. The tests run
// as root; uid 65534 plays another user.

#include "commands/input_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/traced_job.h"

namespace {

namespace fs = std::filesystem;
using ncclwatch::decoder::InputFiles;
using ncclwatch::decoder::IsTraceFile;
using ncclwatch::decoder::SkippedInput;
using ncclwatch::decoder::TraceFiles;
using ncclwatch::decoder::WalkBounds;

constexpr uid_t kNobody = 65534;

void Touch(const std::string& path, uid_t owner = 0) {
  std::ofstream(path) << "x";
  REQUIRE(chown(path.c_str(), owner, owner) == 0);
}

void Link(const std::string& target, const std::string& link, uid_t owner) {
  fs::create_symlink(target, link);
  REQUIRE(lchown(link.c_str(), owner, owner) == 0);
}

const SkippedInput* SkippedAt(const std::vector<SkippedInput>& skipped, const std::string& path) {
  for (const SkippedInput& s : skipped)
    if (s.path == path) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("inside a folder, a link is followed only when its owner could have made it honestly",
          "[input]") {
  jobs::TempDir dir, other;
  const std::string d = dir.path();
  Touch(d + "/real.trace");
  Touch(other.path() + "/roots.trace");            // a file only root owns
  Touch(other.path() + "/theirs.trace", kNobody);  // a file of uid 65534
  Link(other.path() + "/roots.trace", d + "/planted.trace", kNobody);
  Link(other.path() + "/theirs.trace", d + "/collected.trace", kNobody);
  Link(other.path() + "/roots.trace", d + "/mine.trace", 0);
  Link(other.path(), d + "/folder-link", 0);
  Link(d + "/nothing-there", d + "/dangling.trace", 0);
  std::vector<SkippedInput> skipped;
  auto files = TraceFiles({d}, &skipped);
  REQUIRE(files.ok());
  // Followed: the caller's own link, and a link to a file of its owner's, each
  // read by where it leads.
  std::vector<std::string> expected = {other.path() + "/roots.trace",
                                       other.path() + "/theirs.trace", d + "/real.trace"};
  std::sort(expected.begin(), expected.end());
  CHECK(*files == expected);
  const SkippedInput* planted = SkippedAt(skipped, d + "/planted.trace");
  REQUIRE(planted != nullptr);
  CHECK(planted->may_hold_input);
  CHECK(planted->why == d + "/planted.trace: a symbolic link of uid 65534 to a file of uid 0: not "
                            "followed (name it on the command line to read it)");
  const SkippedInput* folder = SkippedAt(skipped, d + "/folder-link");
  REQUIRE(folder != nullptr);
  CHECK_FALSE(folder->may_hold_input);
  const SkippedInput* dangling = SkippedAt(skipped, d + "/dangling.trace");
  REQUIRE(dangling != nullptr);
  CHECK_FALSE(dangling->may_hold_input);
  CHECK(skipped.size() == 3);
  // Named on the command line, the planted link is followed.
  files = TraceFiles({d + "/planted.trace"});
  REQUIRE(files.ok());
  CHECK(*files == std::vector<std::string>{other.path() + "/roots.trace"});
}

TEST_CASE("the walk is bounded: entries in all, and depth", "[input]") {
  jobs::TempDir dir;
  const std::string d = dir.path();
  std::string deep = d;
  for (int i = 0; i < 4; ++i) {
    deep += "/level" + std::to_string(i);
    fs::create_directory(deep);
    Touch(deep + "/at" + std::to_string(i) + ".trace");
  }
  // Three folders deep are searched; the fourth is said not to be.
  std::vector<SkippedInput> skipped;
  auto files = InputFiles({d}, IsTraceFile, &skipped, WalkBounds{1000, 3});
  REQUIRE(files.ok());
  CHECK(files->size() == 3);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].path == d + "/level0/level1/level2/level3");
  CHECK(skipped[0].may_hold_input);
  CHECK(skipped[0].why == skipped[0].path + ": more than 3 folders deep: not searched");
  // Past the entries it may look at, the walk stops with an error.
  for (int i = 0; i < 20; ++i) Touch(d + "/f" + std::to_string(i) + ".trace");
  files = InputFiles({d}, IsTraceFile, nullptr, WalkBounds{10, 64});
  REQUIRE_FALSE(files.ok());
  CHECK(files.status().message() == "more than 10 entries under " + d +
                                        ", the most ncclwatch looks at; name the folder that "
                                        "holds the files");
}

TEST_CASE("pseudo file systems: refused when named, never walked into", "[input]") {
  auto files = InputFiles({"/proc"}, IsTraceFile);
  REQUIRE_FALSE(files.ok());
  CHECK(files.status().message() == "/proc: on proc, a pseudo file system, not read");
  files = InputFiles({"/proc/self/status"}, IsTraceFile);
  REQUIRE_FALSE(files.ok());
  // Met inside a walk, /proc and /sys are passed by (and said so).
  std::vector<SkippedInput> skipped;
  files = InputFiles({"/"}, IsTraceFile, &skipped, WalkBounds{size_t{1} << 20, 1});
  REQUIRE(files.ok());
  const SkippedInput* proc = SkippedAt(skipped, "/proc");
  REQUIRE(proc != nullptr);
  CHECK(proc->why == "/proc: on proc, a pseudo file system: not searched");
  CHECK_FALSE(proc->may_hold_input);
  const SkippedInput* sys = SkippedAt(skipped, "/sys");
  REQUIRE(sys != nullptr);
  CHECK(sys->why == "/sys: on sysfs, a pseudo file system: not searched");
}
