// The shim's ring writer against the decoder's reader: what is written is
// read back whole and in order; wrapping keeps the newest; many threads
// append at once; torn slots are found and skipped; the pinned region keeps
// its records and overflows into the ring; a file is created only where it is
// safe; and a hostile file never crashes the reader.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ncclwatch/ring_format.h"
#include "ring/ring_writer.h"
#include "support/traced_job.h"
#include "trace/trace_file.h"

namespace fs = std::filesystem;
using ncclwatch::decoder::ReadMode;
using ncclwatch::decoder::TraceFile;
using ncclwatch::decoder::TraceFileStats;
using ncclwatch::shim::RecordLocation;
using ncclwatch::shim::Region;
using ncclwatch::shim::RingConfig;
using ncclwatch::shim::RingWriter;
using ncclwatch::shim::SizeParse;
using ncclwatch::shim::SlotClaim;

namespace {

struct Read {
  std::vector<std::string> pinned;
  std::vector<std::string> ring;
  TraceFileStats stats;
};

Read ReadAll(const std::string& path, ReadMode mode = ReadMode::kMapped) {
  Read r;
  auto file = TraceFile::Open(path, mode);
  REQUIRE(file.ok());
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t, absl::Span<const uint8_t> bytes) {
        (pinned ? r.pinned : r.ring)
            .emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      &r.stats);
  return r;
}

// A RingConfig keeps a pointer to its folder's name, as the shim's does. The
// name is copied here and kept for the life of the test process, so a config
// never points at a string that has died (a dangling `dir` once became a
// garbage relative folder, and a trace file, in the current directory).
const char* KeptForever(const std::string& s) {
  static auto* kept = new std::deque<std::string>;  // never freed: configs may be copied anywhere
  return kept->emplace_back(s).c_str();
}

RingConfig Config(const std::string& dir, uint64_t ring_bytes, uint64_t pinned_bytes = 256 << 10) {
  REQUIRE(dir.rfind("/tmp/", 0) == 0);  // a test writes only in its own temporary folder
  RingConfig c;
  c.dir = KeptForever(dir);
  c.ring_bytes = ring_bytes;
  c.pinned_bytes = pinned_bytes;
  c.host = "testhost";
  c.pid = static_cast<uint32_t>(getpid());
  static uint64_t unique = 1;
  c.start_ms = unique++;
  return c;
}

// Opens `w` on a trace in `dir` (a ring of `ring_bytes`), or fails the test
// with the writer's reason.
void OpenIn(RingWriter& w, const jobs::TempDir& dir, uint64_t ring_bytes,
            uint64_t pinned_bytes = 256 << 10) {
  char err[256] = "";
  const bool opened = w.Open(Config(dir.path(), ring_bytes, pinned_bytes), err, sizeof(err));
  INFO(err);
  REQUIRE(opened);
}

bool Append(RingWriter& w, Region region, const std::string& s, RecordLocation* where = nullptr) {
  return w.Append(region, reinterpret_cast<const uint8_t*>(s.data()), s.size(), where);
}

}  // namespace

TEST_CASE("records come back whole and in order, from both regions", "[ring]") {
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 1 << 20);
  std::vector<std::string> want;
  for (int i = 0; i < 300; ++i) {
    // Sizes from 1 byte to several slots.
    want.push_back(std::string(1 + (i * 37) % 700, static_cast<char>('a' + i % 26)) +
                   std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  REQUIRE(Append(w, Region::kPinned, "identity"));
  Read r = ReadAll(w.path(), mode);
  CHECK(r.pinned == std::vector<std::string>{"identity"});
  CHECK(r.ring == want);
  CHECK(r.stats.torn_slots == 0);
  CHECK(r.stats.ring_overwritten == 0);
}

// A ProcessEnd record (trace.proto Record.process_end, empty): what tells
// the reader that the writer is gone.
const std::string kProcessEnd("\x8a\x01\x00", 3);

// `n` records of 1 byte to several slots, then the process's end.
std::vector<std::string> WriteEndedTrace(RingWriter& w, int n) {
  std::vector<std::string> want;
  for (int i = 0; i < n; ++i) {
    want.push_back(std::string(1 + (i * 37) % 300, static_cast<char>('a' + i % 26)) +
                   std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  REQUIRE(Append(w, Region::kPinned, kProcessEnd));
  return want;
}

TEST_CASE("a trace read where it lies gives what a copy gives", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);  // 65536 slots: no lap
  const std::vector<std::string> want = WriteEndedTrace(w, 20000);
  const Read mapped = ReadAll(w.path(), ReadMode::kMapped);
  const Read copied = ReadAll(w.path(), ReadMode::kCopied);
  CHECK(mapped.ring == want);
  CHECK(copied.ring == want);
  CHECK(mapped.pinned == std::vector<std::string>{kProcessEnd});
  CHECK(mapped.stats.records == copied.stats.records);
  CHECK(mapped.stats.torn_slots == 0);
  CHECK(copied.stats.torn_slots == 0);
}

TEST_CASE("an ended writer's newest slots, read where they lie, skip one it is still filling",
          "[ring]") {
  // A process that wrote its end record may still write at exit: the ring's
  // newest slots are then read in place, not copied, and one claimed but
  // not yet published (stamped "being written") counts torn either way.
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);
  const std::vector<std::string> want = WriteEndedTrace(w, 3000);  // all of them the newest
  SlotClaim claim;
  REQUIRE(w.ClaimSlot(&claim));
  std::memset(claim.payload, 'x', 16);  // half written
  const Read r = ReadAll(w.path(), mode);
  CHECK(r.ring == want);
  CHECK(r.stats.torn_slots == 1);
  CHECK_FALSE(r.stats.read_again);
  // Published, it is a record like the others.
  w.Publish(claim, 16);
  const Read after = ReadAll(w.path(), mode);
  CHECK(after.ring.size() == want.size() + 1);
  CHECK(after.ring.back() == std::string(16, 'x'));
  CHECK(after.stats.torn_slots == 0);
}

TEST_CASE("an ended writer's record across a chunk's end, among its newest slots, is checked",
          "[ring]") {
  // A record of several slots that runs past the reader's 2,048-slot chunk
  // is read on its own; among an ended writer's newest slots it is copied
  // with its stamps checked, and its last slot still being written (stamped
  // so) loses the whole record, nothing else.
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);
  std::vector<std::string> want;
  for (int i = 0; i < 2046; ++i) {
    want.push_back("r" + std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  const std::string across(500, 'x');  // 5 slots, from 2,046 to 2,050
  REQUIRE(Append(w, Region::kRing, across));
  const uint64_t last = w.header()->ring_next - 1;
  REQUIRE(last == 2050);
  for (int i = 0; i < 10; ++i) REQUIRE(Append(w, Region::kRing, "after" + std::to_string(i)));
  REQUIRE(Append(w, Region::kPinned, kProcessEnd));
  std::vector<std::string> whole = want;
  whole.push_back(across);
  for (int i = 0; i < 10; ++i) whole.push_back("after" + std::to_string(i));

  const Read r = ReadAll(w.path(), mode);
  CHECK(r.ring == whole);
  CHECK(r.stats.torn_slots == 0);

  // The last slot stamped "being written", as a writer still at it leaves it.
  const int fd = open(w.path(), O_RDWR);
  REQUIRE(fd >= 0);
  const uint64_t stamp = (last + 1) | NCCLWATCH_STAMP_WRITING;
  const off_t at = static_cast<off_t>(w.header()->ring_offset + last * NCCLWATCH_SLOT_BYTES);
  REQUIRE(pwrite(fd, &stamp, sizeof(stamp), at) == static_cast<ssize_t>(sizeof(stamp)));
  close(fd);
  std::vector<std::string> without = want;
  for (int i = 0; i < 10; ++i) without.push_back("after" + std::to_string(i));
  const Read torn = ReadAll(w.path(), mode);
  CHECK(torn.ring == without);
  CHECK(torn.stats.torn_slots == 5);
}

TEST_CASE("a trace that shrinks while it is read is cut short, never a crash", "[ring]") {
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);
  const std::vector<std::string> want = WriteEndedTrace(w, 20000);
  auto file = TraceFile::Open(w.path(), mode);
  REQUIRE(file.ok());
  const uint64_t cut = w.header()->ring_offset + 3000 * NCCLWATCH_SLOT_BYTES;
  std::vector<std::string> got;
  TraceFileStats stats;
  (*file)->ForEachRecord(
      [&](bool pinned, uint64_t, absl::Span<const uint8_t> bytes) {
        if (pinned) return;
        got.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        if (got.size() == 100) REQUIRE(truncate(w.path(), static_cast<off_t>(cut)) == 0);
      },
      &stats);
  CHECK(stats.truncated);
  REQUIRE(got.size() >= 100);
  CHECK(got.size() < want.size());
  // What came is what was written, in order: nothing torn or made of zeros.
  CHECK(std::equal(got.begin(), got.end(), want.begin()));
}

TEST_CASE("a live writer that laps slots read in place is caught: read again, copied", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);  // 65536 slots
  for (int i = 0; i < 30000; ++i) REQUIRE(Append(w, Region::kRing, "r" + std::to_string(i)));
  const uint64_t slots = w.header()->ring_slots;
  SECTION("a writer far from lapping: the mapped read stands") {
    auto file = TraceFile::Open(w.path());
    REQUIRE(file.ok());
    TraceFileStats stats;
    (*file)->ForEachRecord([](bool, uint64_t, absl::Span<const uint8_t>) {}, &stats);
    CHECK(stats.records == 30000);
    CHECK_FALSE(stats.read_again);
  }
  SECTION("the writer laps the first chunk while its records are used") {
    auto file = TraceFile::Open(w.path());
    REQUIRE(file.ok());
    TraceFileStats stats;
    bool lapped = false;
    (*file)->ForEachRecord(
        [&](bool pinned, uint64_t, absl::Span<const uint8_t>) {
          if (pinned || lapped) return;
          lapped = true;  // the oldest slots are claimed for the next lap
          while (w.header()->ring_next <= slots) REQUIRE(Append(w, Region::kRing, "later"));
        },
        &stats);
    CHECK(stats.read_again);
    // Copied, the file reads whole (the newest lap).
    const Read again = ReadAll(w.path(), ReadMode::kCopied);
    CHECK_FALSE(again.stats.read_again);
    CHECK(again.stats.torn_slots == 0);
    CHECK(again.ring.back() == "later");
  }
}

TEST_CASE("a full ring keeps the newest records", "[ring]") {
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES);  // 64 slots
  for (int i = 0; i < 1000; ++i) REQUIRE(Append(w, Region::kRing, "record " + std::to_string(i)));
  Read r = ReadAll(w.path(), mode);
  REQUIRE(r.ring.size() == 64);
  CHECK(r.ring.front() == "record 936");
  CHECK(r.ring.back() == "record 999");
  CHECK(r.stats.ring_overwritten == 936);
  CHECK(r.stats.ring_claimed == 1000);
}

TEST_CASE("a record cut by the ring's oldest edge is skipped, not misread", "[ring]") {
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES);
  const std::string big(3 * NCCLWATCH_SLOT_PAYLOAD_BYTES, 'B');  // 3 slots
  for (int i = 0; i < 40; ++i)
    REQUIRE(Append(w, Region::kRing, big));  // 120 slots: wraps mid-record
  Read r = ReadAll(w.path(), mode);
  for (const std::string& s : r.ring) CHECK(s == big);
  CHECK(r.ring.size() == 21);  // 64 slots: 21 whole records and one slot of a record that is gone
  CHECK(r.stats.torn_slots == 1);
}

TEST_CASE("threads append at once without losing or tearing a record", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 8 << 20);
  constexpr int kThreads = 4, kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&w, t] {
      for (int i = 0; i < kEach; ++i)
        Append(w, Region::kRing, std::to_string(t) + ":" + std::to_string(i));
    });
  }
  for (auto& t : threads) t.join();
  Read r = ReadAll(w.path());
  REQUIRE(r.ring.size() == kThreads * kEach);
  CHECK(r.stats.torn_slots == 0);
  std::vector<int> next(kThreads, 0);
  bool in_order = true;
  for (const std::string& s : r.ring) {
    const int t = std::stoi(s.substr(0, s.find(':')));
    const int i = std::stoi(s.substr(s.find(':') + 1));
    in_order &= i == next[t]++;
  }
  CHECK(in_order);  // each thread's records in its own order
}

TEST_CASE("a slot whose stamp does not match its place is counted torn and skipped", "[ring]") {
  const ReadMode mode = GENERATE(ReadMode::kMapped, ReadMode::kCopied);
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 1 << 20);
  for (int i = 0; i < 10; ++i) REQUIRE(Append(w, Region::kRing, "r" + std::to_string(i)));
  auto slot = [&](int i) {
    return reinterpret_cast<ncclwatch_slot_header*>(reinterpret_cast<uint8_t*>(w.header()) +
                                                    w.header()->ring_offset +
                                                    i * NCCLWATCH_SLOT_BYTES);
  };
  // A writer killed between claiming slot 4 and publishing it leaves it
  // marked as being written: torn.
  slot(4)->stamp = 5 | NCCLWATCH_STAMP_WRITING;
  // A length that lies: torn.
  slot(6)->length = 500;
  // Slot 2 never written (the unused rest of a claim block: stamp 0), slot 8
  // holding an earlier lap's record (stamp 9 - ring_slots would be; here the
  // ring is larger, so a stamp from the future is torn instead).
  slot(2)->stamp = 0;
  slot(8)->stamp = 9 + w.header()->ring_slots;
  Read r = ReadAll(w.path(), mode);
  CHECK(r.ring == std::vector<std::string>{"r0", "r1", "r3", "r5", "r7", "r9"});
  CHECK(r.stats.torn_slots == 3);
  CHECK(r.stats.unwritten_slots == 1);
  // Format 2 had no claim blocks: every slot under the cursor was claimed
  // for a record, and one that is not whole is torn, stamp 0 too.
  w.header()->format_version = 2;
  r = ReadAll(w.path(), mode);
  CHECK(r.ring.size() == 6);
  CHECK(r.stats.torn_slots == 4);
  CHECK(r.stats.unwritten_slots == 0);
}

TEST_CASE("a slot an earlier lap wrote and this lap never did counts as unwritten", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES);  // 64 slots
  for (int i = 0; i < 100; ++i) REQUIRE(Append(w, Region::kRing, "r" + std::to_string(i)));
  // Logical 70 (physical 6) holds record 70; make it hold record 6 (stamp 7),
  // as if slot 70 had been in a claim block its thread never used.
  auto* slot6 = reinterpret_cast<ncclwatch_slot_header*>(
      reinterpret_cast<uint8_t*>(w.header()) + w.header()->ring_offset + 6 * NCCLWATCH_SLOT_BYTES);
  slot6->stamp = 7;
  // And logical 71 as if a writer died in an earlier lap's record 7.
  (slot6 + NCCLWATCH_SLOT_BYTES / sizeof(*slot6))->stamp = 8 | NCCLWATCH_STAMP_WRITING;
  Read r = ReadAll(w.path());
  CHECK(r.ring.size() == 62);
  CHECK(std::find(r.ring.begin(), r.ring.end(), "r6") == r.ring.end());  // never the old record
  CHECK(std::find(r.ring.begin(), r.ring.end(), "r70") == r.ring.end());
  CHECK(r.stats.unwritten_slots == 2);
  CHECK(r.stats.torn_slots == 0);
}

TEST_CASE("the pinned region keeps its records and overflows into the ring", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 1 << 20, 64 * NCCLWATCH_SLOT_BYTES);
  for (int i = 0; i < 100; ++i) REQUIRE(Append(w, Region::kPinned, "p" + std::to_string(i)));
  Read r = ReadAll(w.path());
  REQUIRE(r.pinned.size() == 64);
  CHECK(r.pinned.front() == "p0");
  CHECK(r.ring.size() == 36);
  CHECK(r.ring.front() == "p64");
  CHECK(r.stats.pinned_overflow == 36);
}

TEST_CASE("records encoded in place: published, or given up as padding the reader skips",
          "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES);
  ncclwatch::shim::SlotClaim a, b, c;
  REQUIRE(w.ClaimSlot(&a));
  REQUIRE(w.ClaimSlot(&b));
  REQUIRE(w.ClaimSlot(&c));
  std::memcpy(a.payload, "first", 5);
  w.Publish(a, 5);
  std::memcpy(b.payload, "did not fit", 11);
  w.Discard(b);
  // c was claimed and never published (the writer died while encoding): torn
  // (marked as being written), not unwritten.
  REQUIRE(Append(w, Region::kRing, "after"));
  Read r = ReadAll(w.path());
  CHECK(r.ring == std::vector<std::string>{"first", "after"});
  CHECK(r.stats.padding_slots == 1);
  CHECK(r.stats.torn_slots == 1);
  CHECK(r.stats.unwritten_slots == 0);
}

TEST_CASE("a patch site rewrites 4 bytes of its record while the slot still holds it", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES);
  SlotClaim claim;
  REQUIRE(w.ClaimSlot(&claim));
  std::memcpy(claim.payload, "rc=????", 7);
  w.Publish(claim, 7);
  const ncclwatch::shim::PatchSite site = RingWriter::SiteOf(claim.where, 3);
  REQUIRE(site.at != nullptr);
  site.Write4("0000");
  CHECK(ReadAll(w.path()).ring == std::vector<std::string>{"rc=0000"});
  // Beyond the slot's first cache line there is no site.
  CHECK(RingWriter::SiteOf(claim.where, 64 - NCCLWATCH_SLOT_HEADER_BYTES - 3).at == nullptr);
  for (int i = 0; i < 64; ++i) REQUIRE(Append(w, Region::kRing, "filler"));
  site.Write4("XXXX");  // the slot holds another record now: untouched
  for (const std::string& s : ReadAll(w.path()).ring) CHECK(s == "filler");
}

TEST_CASE("size settings: suffixes, and no silent wrap, sign or junk", "[ring][settings]") {
  using ncclwatch::shim::ParseByteSize;
  const auto ok = [](const char* s) {
    uint64_t v = 0;
    INFO(s);
    REQUIRE(ParseByteSize(s, &v) == SizeParse::kOk);
    return v;
  };
  CHECK(ok("65536") == 65536);
  CHECK(ok("512k") == 512ull << 10);
  CHECK(ok("16M") == 16ull << 20);
  CHECK(ok("16MiB") == 16ull << 20);
  CHECK(ok("1G") == 1ull << 30);
  CHECK(ok("4GB") == 4ull << 30);
  CHECK(ok("18446744073709551615") == UINT64_MAX);
  CHECK(ok("17179869183G") == 17179869183ull << 30);

  const auto bad = [](const char* s) {
    uint64_t v = 12345;
    const SizeParse r = ParseByteSize(s, &v);
    CHECK(v == 12345);  // untouched unless the value is good
    return r;
  };
  // Once 1 GiB (the shift wrapped) and 64K (strtoull negates).
  CHECK(bad("17179869185G") == SizeParse::kOverflow);
  CHECK(bad("17179869184G") == SizeParse::kOverflow);
  CHECK(bad("18446744073709551616") == SizeParse::kOverflow);
  CHECK(bad("99999999999999999999999") == SizeParse::kOverflow);
  CHECK(bad("-18446744073709486080") == SizeParse::kNegative);
  CHECK(bad("-1") == SizeParse::kNegative);
  for (const char* s :
       {"", " 16M", "16M ", "+16M", "16X", "1.5G", "G", "0x100000", "16MM", "16Mi B"})
    CHECK(bad(s) == SizeParse::kMalformed);
}

TEST_CASE("trace files are made only where it is safe, never over an existing file", "[ring]") {
  jobs::TempDir dir;
  char err[256];
  const std::string nested = dir.path() + "/a/b";
  RingConfig c = Config(nested, 1 << 20);
  RingWriter w;
  REQUIRE(w.Open(c, err, sizeof(err)));  // missing folders are made, 0700
  struct stat st;
  REQUIRE(stat((dir.path() + "/a/b").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(stat(w.path(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 >=
        w.header()->file_bytes);  // allocated, not sparse

  // The same host, pid and millisecond (ranks in host-network containers,
  // each pid 1): a file of its own beside the first, which stays untouched.
  RingWriter again;
  REQUIRE(again.Open(c, err, sizeof(err)));
  CHECK(std::string(again.path()) != w.path());
  CHECK(fs::path(again.path()).filename().string() ==
        fs::path(w.path()).filename().stem().string() + "-1.trace");

  const std::string open_dir = dir.path() + "/open";
  mkdir(open_dir.c_str(), 0777);
  chmod(open_dir.c_str(), 0777);  // world-writable, not sticky
  RingWriter refused;
  CHECK_FALSE(refused.Open(Config(open_dir, 1 << 20), err, sizeof(err)));
  CHECK(std::string(err).find("writable by everyone") != std::string::npos);

  chmod(open_dir.c_str(), 01777);  // sticky and ours: like /tmp, but owned by us
  RingWriter sticky;
  CHECK(sticky.Open(Config(open_dir, 1 << 20), err, sizeof(err)));

  // A symbolic link planted where the file will be is not followed.
  RingConfig planted = Config(dir.path(), 1 << 20);
  const std::string target = dir.path() + "/victim";
  std::ofstream(target) << "precious";
  const std::string name = dir.path() + "/ncclwatch.testhost." + std::to_string(planted.pid) + "." +
                           std::to_string(planted.start_ms) + ".trace";
  REQUIRE(symlink(target.c_str(), name.c_str()) == 0);
  RingWriter linked;  // made beside the link, under another name
  REQUIRE(linked.Open(planted, err, sizeof(err)));
  CHECK(std::string(linked.path()) != name);
  struct stat made;
  REQUIRE(lstat(linked.path(), &made) == 0);
  CHECK(S_ISREG(made.st_mode));
  std::ifstream in(target);
  std::string content;
  in >> content;
  CHECK(content == "precious");
}

TEST_CASE("a folder planted by someone else, or a symbolic link, is refused", "[ring]") {
  jobs::TempDir dir;
  char err[256];
  const std::string ours = dir.path() + "/ours";
  REQUIRE(mkdir(ours.c_str(), 0700) == 0);

  // A link to a folder of ours: refused all the same, nothing written there.
  const std::string link = dir.path() + "/link";
  REQUIRE(symlink(ours.c_str(), link.c_str()) == 0);
  for (const std::string& d : {link, link + "/", link + "//"}) {
    RingWriter w;
    INFO(d);
    CHECK_FALSE(w.Open(Config(d, 1 << 20), err, sizeof(err)));
    CHECK(std::string(err) == d + " is a symbolic link, not a folder of yours");
  }
  CHECK(std::filesystem::is_empty(ours));

  // Someone else's folder, not writable by everyone: refused, though we could
  // write in it (as root) and it passes the world-writable check.
  if (geteuid() != 0) {
    WARN("not root: cannot give a folder to another user; that part is skipped");
    return;
  }
  for (const mode_t mode : {0700, 0755, 01777}) {
    const std::string theirs = dir.path() + "/theirs" + std::to_string(mode);
    REQUIRE(mkdir(theirs.c_str(), mode) == 0);
    REQUIRE(chmod(theirs.c_str(), mode) == 0);
    REQUIRE(chown(theirs.c_str(), 65534, 65534) == 0);
    RingWriter w;
    INFO(theirs);
    CHECK_FALSE(w.Open(Config(theirs, 1 << 20), err, sizeof(err)));
    CHECK(std::string(err) == theirs + " belongs to uid 65534, not to you (uid 0)");
    CHECK(std::filesystem::is_empty(theirs));
  }
  // The same folder back in our hands is used.
  const std::string mine = dir.path() + "/theirs" + std::to_string(0700);
  REQUIRE(chown(mine.c_str(), 0, 0) == 0);
  RingWriter w;
  CHECK(w.Open(Config(mine, 1 << 20), err, sizeof(err)));
}

TEST_CASE("a hostile file gets a one-line reason, never a crash", "[ring][fuzz]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 64 * NCCLWATCH_SLOT_BYTES, 64 * NCCLWATCH_SLOT_BYTES);
  for (int i = 0; i < 100; ++i)
    Append(w, i % 5 ? Region::kRing : Region::kPinned, std::string(i % 300 + 1, 'x'));
  std::ifstream in(w.path(), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto try_file = [&](const std::string& bytes) {
    const std::string path = dir.path() + "/hostile.trace";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    auto f = TraceFile::Open(path);
    if (!f.ok()) {
      const std::string msg(f.status().message());
      CHECK(msg.find('\n') == std::string::npos);
      return std::string(msg);
    }
    TraceFileStats stats;
    size_t bytes_seen = 0;
    (*f)->ForEachRecord(
        [&](bool, uint64_t, absl::Span<const uint8_t> b) { bytes_seen += b.size(); }, &stats);
    CHECK(bytes_seen <= bytes.size());
    return std::string();
  };
  CHECK(try_file("").find("not an ncclwatch trace") != std::string::npos);
  CHECK(try_file(std::string("NCCLWTRC") + std::string(100, '\0')).find("truncated trace") !=
        std::string::npos);
  CHECK(try_file(std::string(8192, 'z')).find("bad magic") != std::string::npos);
  CHECK(try_file(good.substr(0, good.size() / 2)).find("truncated trace") != std::string::npos);
  std::string v5 = good;
  v5[8] = 5;  // format version: a newer one
  CHECK(try_file(v5).find("trace file format 5; this ncclwatch reads formats 1 to 4") !=
        std::string::npos);
  std::string v2 = good;
  v2[8] = 2;  // format 2 (no claim blocks): these records are format 2's too, and read
  CHECK(try_file(v2).empty());
  std::string blocks = good;
  blocks[offsetof(ncclwatch_ring_header, claim_blocks_used)] = 1;  // the time-order path
  CHECK(try_file(blocks).empty());
  std::string v0 = good;
  v0[8] = 0;
  CHECK(try_file(v0).find("format 0") != std::string::npos);
  std::string v1 = good;
  v1[8] = 1;  // format 1 (no call slots): these records are format 1's too, and read
  CHECK(try_file(v1).empty());
  std::string s2 = good;
  s2[12] = 9;  // schema version
  CHECK(try_file(s2).find("schema version 9") != std::string::npos);
  CHECK(try_file(good).empty());
  // Random damage anywhere, many times.
  std::mt19937 rng(42);
  for (int round = 0; round < 3000; ++round) {
    std::string bad = good;
    const int edits = 1 + static_cast<int>(rng() % 16);
    for (int e = 0; e < edits; ++e) {
      const size_t at =
          rng() % (round % 3 == 0 ? 512 : bad.size());  // the header a third of the time
      bad[at] = static_cast<char>(rng());
    }
    if (round % 2) bad[offsetof(ncclwatch_ring_header, claim_blocks_used)] = 1;
    try_file(bad);
  }
}

TEST_CASE("a new ring is faulted in when it is made: no record takes a page fault", "[ring]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenIn(w, dir, 4 << 20);
  const size_t bytes = w.header()->file_bytes;
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  REQUIRE(mincore(w.header(), bytes, resident.data()) == 0);
  size_t in = 0;
  for (unsigned char r : resident) in += r & 1;
  CHECK(in == resident.size());
  // Writable too: no write fault either (the pages are dirty, not the zero page).
  // (Under AddressSanitizer the first touch of the shadow of each ring page
  // faults too, so the count is checked only in the plain build.)
  const std::vector<uint8_t> record(64, 'x');
  rusage before{}, after{};
  getrusage(RUSAGE_THREAD, &before);
  for (int i = 0; i < 20000; ++i) w.Append(Region::kRing, record.data(), record.size());
  getrusage(RUSAGE_THREAD, &after);
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(after.ru_minflt - before.ru_minflt < 10);
#endif
}

TEST_CASE("two processes of one host, pid and start millisecond each get a trace of their own",
          "[ring]") {
  // Ranks in host-network containers are each pid 1, with the host's name:
  // the second's O_EXCL create failed and it ran untraced.
  jobs::TempDir dir;
  const RingConfig same = Config(dir.path(), 1 << 20);
  RingWriter first, second, third;
  char err[256] = "";
  REQUIRE(first.Open(same, err, sizeof(err)));
  INFO(err);
  REQUIRE(second.Open(same, err, sizeof(err)));
  REQUIRE(third.Open(same, err, sizeof(err)));
  CHECK(std::set<std::string>{first.path(), second.path(), third.path()}.size() == 3);
  REQUIRE(Append(first, Region::kRing, "first's"));
  REQUIRE(Append(second, Region::kRing, "second's"));
  REQUIRE(Append(third, Region::kRing, "third's"));
  CHECK(ReadAll(first.path()).ring == std::vector<std::string>{"first's"});
  CHECK(ReadAll(second.path()).ring == std::vector<std::string>{"second's"});
  CHECK(ReadAll(third.path()).ring == std::vector<std::string>{"third's"});
}

TEST_CASE("folders the writer makes are 0700 whatever the umask", "[ring]") {
  // Under umask 0777, mkdir(0700) made them 0000: a user's job ran untraced.
  jobs::TempDir dir;
  const mode_t saved = umask(0777);
  RingWriter w;
  char err[256] = "";
  const bool opened = w.Open(Config(dir.path() + "/x/y", 1 << 20), err, sizeof(err));
  umask(saved);
  INFO(err);
  REQUIRE(opened);
  for (const std::string& d : {dir.path() + "/x", dir.path() + "/x/y"}) {
    struct stat st;
    REQUIRE(stat(d.c_str(), &st) == 0);
    INFO(d);
    CHECK((st.st_mode & 0777) == 0700);
  }
  struct stat st;
  REQUIRE(stat(w.path(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

namespace {

// A writer whose file starts with a ring of 64 slots and can grow to `full`.
void OpenSmall(RingWriter& w, const jobs::TempDir& dir, uint64_t full) {
  RingConfig c = Config(dir.path(), full);
  c.initial_ring_bytes = 64 * NCCLWATCH_SLOT_BYTES;
  char err[256] = "";
  const bool opened = w.Open(c, err, sizeof(err));
  INFO(err);
  REQUIRE(opened);
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

TEST_CASE("a small ring is a small file, and grows to the whole ring: both read back",
          "[ring][grow]") {
  // A process that only asks NCCL's version wrote a 16 MiB file.
  jobs::TempDir dir;
  RingWriter w;
  OpenSmall(w, dir, 1 << 20);
  CHECK(w.ring_slots() == 64);
  CHECK(w.CanGrow());
  const uint64_t small = FileSize(w.path());
  CHECK(small == w.header()->ring_offset + 64 * NCCLWATCH_SLOT_BYTES);
  CHECK(small < (512u << 10));
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back("before " + std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  REQUIRE(Append(w, Region::kPinned, "identity"));
  Read r = ReadAll(w.path());  // the small shape
  CHECK(r.ring == want);
  CHECK(r.pinned == std::vector<std::string>{"identity"});

  char err[256] = "";
  REQUIRE(w.GrowRing(err, sizeof(err)));
  CHECK_FALSE(w.CanGrow());
  CHECK(w.ring_slots() == (1u << 20) / NCCLWATCH_SLOT_BYTES);
  CHECK(w.header()->ring_slots == w.ring_slots());
  CHECK(FileSize(w.path()) == w.header()->ring_offset + (1u << 20));
  CHECK(w.header()->file_bytes == FileSize(w.path()));
  for (int i = 0; i < 3000; ++i) {  // past the small ring's size many times
    want.push_back("after " + std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  r = ReadAll(w.path());  // the grown shape
  CHECK(r.ring == want);
  CHECK(r.pinned == std::vector<std::string>{"identity"});
  CHECK(r.stats.torn_slots == 0);
  CHECK(r.stats.ring_overwritten == 0);
  REQUIRE(w.GrowRing(err, sizeof(err)));  // once only: nothing more to do
  CHECK(FileSize(w.path()) == w.header()->ring_offset + (1u << 20));
}

TEST_CASE("a small ring that wrapped before it grew keeps its newest records, in place",
          "[ring][grow]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenSmall(w, dir, 1 << 20);
  std::vector<std::string> all;
  for (int i = 0; i < 1000; ++i) {  // 1000 slots through a ring of 64
    all.push_back("before " + std::to_string(i));
    REQUIRE(Append(w, Region::kRing, all.back()));
  }
  char err[256] = "";
  REQUIRE(w.GrowRing(err, sizeof(err)));
  std::vector<std::string> want(all.end() - 64, all.end());  // what the small ring held
  for (int i = 0; i < 100; ++i) {
    want.push_back("after " + std::to_string(i));
    REQUIRE(Append(w, Region::kRing, want.back()));
  }
  for (const ReadMode mode : {ReadMode::kMapped, ReadMode::kCopied}) {
    const Read r = ReadAll(w.path(), mode);
    CHECK(r.ring == want);
    CHECK(r.stats.torn_slots == 0);
  }
}

TEST_CASE("a ring that cannot grow stays small and whole", "[ring][grow]") {
  jobs::TempDir dir;
  RingWriter w;
  OpenSmall(w, dir, 1 << 20);
  REQUIRE(Append(w, Region::kRing, "kept"));
  // The file replaced under the writer: never extended, never remapped.
  const std::string moved = std::string(w.path()) + ".moved";
  REQUIRE(rename(w.path(), moved.c_str()) == 0);
  std::ofstream(w.path()) << "someone else's";
  char err[256] = "";
  CHECK_FALSE(w.GrowRing(err, sizeof(err)));
  CHECK(std::string(err).find("stays at 8192 bytes") != std::string::npos);
  CHECK(w.ring_slots() == 64);
  CHECK_FALSE(w.CanGrow());
  CHECK(FileSize(w.path()) == std::string("someone else's").size());
  REQUIRE(Append(w, Region::kRing, "still"));
  CHECK(ReadAll(moved).ring == std::vector<std::string>{"kept", "still"});
}
