// Every WARN that NCCL 2.4 to 2.32 can print is in the message catalogue.
//
// tests/data/nccl_warns.tsv holds each release's WARN format strings, read
// from NCCL's git history by scripts/extract-nccl-warns.py and, for 2.31.2 to
// 2.32.6 (no tags in the history yet), from the releases' libnccl.so.2 (its
// header says which tags and libraries, and how). Each format becomes the line NCCL would print
// (its conversions filled with neutral values, nccl_warns.h) and must be matched by a message of
// the catalogue that names a subsystem, a meaning and a fix, both as text and as a WARN line of a
// log that explain reads.

#include "nccl_warns.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "knowledge/message_catalogue.h"
#include "logs/nccl_log.h"
#include "support/traced_job.h"

namespace {

using ncclwatch::decoder::CatalogueMessage;
using ncclwatch::decoder::FindMessage;
using ncclwatch::decoder::MessageArea;

// The formats no message of the catalogue names, and why: each is a format
// whose own words say nothing of where or why, so a catalogue entry for it
// would have to match anything. Kept small; the test checks that each is
// still in the data and still unmatched, so that none stays here by mistake.
const std::map<std::string, std::string> kAllowed = {
    {"%s",
     "misc/strongstream.cc prints a message kept elsewhere (its launch-race text, which the "
     "catalogue does name: nccl.usage.launch_race); the format itself is empty"},
    {"%s() failed: %s",
     "misc/nvmlwrap.cc's NVMLCHECK: the NVML function's name is the first %s (a real line, "
     "'nvmlDeviceGetHandleByPciBusId() failed: ...', is matched by nccl.nvml); the format's "
     "words alone are any call's"},
    {"%s failed: %d%s%s",
     "misc/gdrwrap.cc (2.31-2.32): a CUDA driver call's name and result, the words ' failed: ' "
     "alone name no subsystem"},
};

std::string WarnsPath() {
  return (std::filesystem::path(NCCLWATCH_LOG_CORPUS) / ".." / "nccl_warns.tsv").string();
}

TEST_CASE("the WARN formats file says how it was made and spans NCCL 2.4 to 2.32",
          "[logs][catalogue]") {
  std::string header;
  const std::vector<nccl_warns::Format> formats = nccl_warns::Read(WarnsPath(), &header);
  CHECK(absl::StrContains(header, "scripts/extract-nccl-warns.py"));
  CHECK(absl::StrContains(header, "github.com/NVIDIA/nccl"));
  CHECK(absl::StrContains(header, "libnccl.so.2"));
  REQUIRE(formats.size() >= 900);
  std::set<std::string> firsts, lasts, seen;
  for (const nccl_warns::Format& f : formats) {
    firsts.insert(f.first);
    lasts.insert(f.last);
    // src/..., or a file the build generates (build/obj/device/gensrc/...,
    // the __FILE__ a library's call passes).
    CHECK((absl::StartsWith(f.file, "src/") || absl::StartsWith(f.file, "build/")));
    CHECK(seen.insert(f.format).second);  // deduplicated
  }
  CHECK(firsts.count("2.4.2") == 1);
  CHECK(firsts.count("2.31.2") == 1);  // read from the libraries
  CHECK(firsts.count("2.32.3") == 1);
  CHECK(lasts.count("2.32.6") == 1);
}

TEST_CASE("every WARN of NCCL 2.4 to 2.32 is matched by a message with a subsystem",
          "[logs][catalogue]") {
  std::string header;
  const std::vector<nccl_warns::Format> formats = nccl_warns::Read(WarnsPath(), &header);
  REQUIRE(formats.size() >= 900);
  size_t matched = 0;
  std::set<std::string> allowed_seen;
  for (const nccl_warns::Format& f : formats) {
    const std::string line = nccl_warns::Fill(f.format);
    INFO(f.file << ": " << f.format << "\n  as: " << line);
    const CatalogueMessage* m = FindMessage(line);
    if (kAllowed.count(f.format)) {
      allowed_seen.insert(f.format);
      CHECK(m == nullptr);  // else it no longer needs to be allowed
      continue;
    }
    REQUIRE(m != nullptr);
    const std::string area = ncclwatch::decoder::AreaName(MessageArea(*m));
    CHECK_FALSE(area.empty());
    CHECK(area != "unknown");
    CHECK(*m->meaning != '\0');
    REQUIRE(ncclwatch::decoder::CauseNamed(ncclwatch::decoder::CauseOf(*m).name) ==
            &ncclwatch::decoder::CauseOf(*m));
    CHECK(*ncclwatch::decoder::CauseOf(*m).fix != '\0');
    ++matched;
  }
  CHECK(allowed_seen.size() == kAllowed.size());
  CHECK(matched + kAllowed.size() == formats.size());
}

TEST_CASE("every WARN of NCCL 2.4 to 2.32, as a line of a log, keeps its message",
          "[logs][catalogue]") {
  // One log holding every format as NCCL 2.28 prints a WARN: the reader must
  // take each line's text whole and find its message in it.
  std::string header;
  const std::vector<nccl_warns::Format> formats = nccl_warns::Read(WarnsPath(), &header);
  jobs::TempDir dir;
  const std::string path = dir.path() + "/warns.log";
  std::vector<const CatalogueMessage*> expected;
  {
    std::ofstream out(path);
    int n = 0;
    for (const nccl_warns::Format& f : formats) {
      const std::string line = nccl_warns::Fill(f.format);
      // A format with a newline inside (NVLS's bind failure, 2.27-2.31) prints
      // as several lines; the case above matches it as one text.
      if (kAllowed.count(f.format) || line.find('\n') != std::string::npos) continue;
      out << "\nnode1:4242:4250 [0] " << absl::StripPrefix(f.file, "src/") << ":" << ++n
          << " NCCL WARN " << line << "\n";
      expected.push_back(FindMessage(line));
    }
  }
  ncclwatch::decoder::NcclLog log;
  REQUIRE(log.AddFile(path).ok());
  log.Finish();
  std::vector<const CatalogueMessage*> got;
  for (const auto& l : log.lines())
    if (l.level == ncclwatch::decoder::LogLine::kWarn) got.push_back(l.message);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(i);
    REQUIRE(got[i] != nullptr);
    CHECK(got[i] == expected[i]);
  }
}

}  // namespace
