// The table of subsystems (knowledge/area.h): every area has one name, the
// name gives the area back, and the knowledge that names areas (the
// message catalogue, NCCL's source tree, a crash's module, a stack's place)
// names them from it.

#include "knowledge/area.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "knowledge/message_catalogue.h"
#include "knowledge/stack_places.h"

namespace {

using ncclwatch::decoder::Area;
using ncclwatch::decoder::AreaName;
using ncclwatch::decoder::AreaNamed;

std::vector<Area> AllAreas() {
  std::vector<Area> all;
  for (int i = 0; i < ncclwatch::decoder::kAreaCount; ++i) all.push_back(static_cast<Area>(i));
  return all;
}

}  // namespace

TEST_CASE("each area has its own name, and the name gives it back", "[area]") {
  std::set<std::string> seen;
  for (const Area a : AllAreas()) {
    const std::string name = AreaName(a);
    INFO(name);
    CHECK(seen.insert(name).second);
    CHECK(AreaNamed(name) == a);
  }
  CHECK(std::string(AreaName(Area::kNone)).empty());
  CHECK(std::string(AreaName(Area::kNetIb)) == "net/ib");
  CHECK(std::string(AreaName(Area::kJaxCoordination)) == "jax/coordination");
  CHECK_FALSE(AreaNamed("net/infiniband").has_value());
  CHECK_FALSE(AreaNamed("NETWORK").has_value());
}

TEST_CASE("every cause that fails NCCL's init is filed under a subsystem", "[area]") {
  using ncclwatch::decoder::CatalogueMessage;
  using ncclwatch::decoder::CauseOf;
  using ncclwatch::decoder::MessageArea;
  for (const CatalogueMessage& m : ncclwatch::decoder::CatalogueMessages()) {
    INFO(m.id);
    if (CauseOf(m).init_failure) CHECK(CauseOf(m).subsystem != Area::kNone);
    // A message's own area, where it names one, is more than its cause's.
    if (m.area != Area::kNone) CHECK(MessageArea(m) == m.area);
  }
  CHECK(CauseOf(ncclwatch::decoder::CatalogueCause::kIbMemlock).subsystem == Area::kIb);
  CHECK(CauseOf(ncclwatch::decoder::CatalogueCause::kWorldSize).subsystem == Area::kBootstrap);
}

TEST_CASE("a crash's module and a stack's place name their part", "[area]") {
  using ncclwatch::decoder::ModuleSubsystem;
  CHECK(ModuleSubsystem("/usr/lib/x86_64-linux-gnu/libnccl.so.2") == Area::kNccl);
  CHECK(ModuleSubsystem("libcudart.so.13") == Area::kCuda);
  CHECK(ModuleSubsystem("libtorch_cuda.so") == Area::kPytorch);
  CHECK(ModuleSubsystem("libmlx5.so.1") == Area::kNetIb);
  CHECK(ModuleSubsystem("/opt/train/bin/python3") == Area::kNone);
  using ncclwatch::decoder::PlaceOfFrame;
  REQUIRE(PlaceOfFrame("ncclCommInitRank", "") != nullptr);
  CHECK(PlaceOfFrame("ncclCommInitRank", "")->subsystem == Area::kNccl);
  REQUIRE(PlaceOfFrame("c10d::TCPStore::get", "") != nullptr);
  CHECK(PlaceOfFrame("c10d::TCPStore::get", "")->subsystem == Area::kC10dStore);
}
