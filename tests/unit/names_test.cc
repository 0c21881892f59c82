// The decoder's names for NCCL's numbers, checked against the real nccl.h
// the build uses (the newest release fetched) so a renumbering in a new NCCL
// shows up here first.

#include "report/names.h"

#include <nccl.h>

#include <catch2/catch.hpp>
#include <csignal>

namespace d = ncclwatch::decoder;

TEST_CASE("datatype names and sizes follow nccl.h", "[names]") {
  CHECK(d::DatatypeName(ncclInt8) == "int8");
  CHECK(d::DatatypeName(ncclUint8) == "uint8");
  CHECK(d::DatatypeName(ncclInt32) == "int32");
  CHECK(d::DatatypeName(ncclUint32) == "uint32");
  CHECK(d::DatatypeName(ncclInt64) == "int64");
  CHECK(d::DatatypeName(ncclUint64) == "uint64");
  CHECK(d::DatatypeName(ncclFloat16) == "float16");
  CHECK(d::DatatypeName(ncclFloat32) == "float32");
  CHECK(d::DatatypeName(ncclFloat64) == "float64");
  CHECK(d::DatatypeName(ncclBfloat16) == "bfloat16");
  CHECK(d::DatatypeName(ncclFloat8e4m3) == "float8e4m3");
  CHECK(d::DatatypeName(ncclFloat8e5m2) == "float8e5m2");
  CHECK(d::DatatypeName(ncclNumTypes) == "datatype#12");
  CHECK(d::DatatypeBytes(ncclFloat16) == 2);
  CHECK(d::DatatypeBytes(ncclFloat64) == 8);
  CHECK(d::DatatypeBytes(ncclFloat8e5m2) == 1);
  CHECK(d::DatatypeBytes(-1) == 0);
}

TEST_CASE("reduction and result names follow nccl.h", "[names]") {
  CHECK(d::RedopName(ncclSum) == "sum");
  CHECK(d::RedopName(ncclProd) == "prod");
  CHECK(d::RedopName(ncclMax) == "max");
  CHECK(d::RedopName(ncclMin) == "min");
  CHECK(d::RedopName(ncclAvg) == "avg");
  CHECK(d::RedopName(ncclNumOps) == "premulsum#5");  // the first user-created operation
  CHECK(d::ResultName(ncclSuccess) == "ncclSuccess");
  CHECK(d::ResultName(ncclSystemError) == "ncclSystemError");
  CHECK(d::ResultName(ncclRemoteError) == "ncclRemoteError");
  CHECK(d::ResultName(ncclInProgress) == "ncclInProgress");
  CHECK(d::ResultName(2147483647) == "pending");
  CHECK(d::ResultName(99) == "result#99");
}

TEST_CASE("NCCL version codes in both of NCCL's encodings", "[names]") {
  CHECK(d::NcclVersionString(NCCL_VERSION_CODE) == std::to_string(NCCL_MAJOR) + "." +
                                                       std::to_string(NCCL_MINOR) + "." +
                                                       std::to_string(NCCL_PATCH));
  CHECK(d::NcclVersionString(NCCL_VERSION(2, 28, 9)) == "2.28.9");
  CHECK(d::NcclVersionString(NCCL_VERSION(2, 18, 3)) == "2.18.3");
  CHECK(d::NcclVersionString(2804) == "2.8.4");  // before 2.9: major*1000 + minor*100 + patch
  CHECK(d::NcclVersionString(0) == "unknown");
  CHECK(d::NcclVersionString(-3) == "unknown");
}

TEST_CASE("communicators, signals and rank lists print compactly", "[names]") {
  CHECK(d::CommName(0xabcdefull) == "0000000000abcdef");
  CHECK(d::CommShort(0x1234567890abcdefull) == "123456");
  CHECK(d::SignalName(SIGSEGV) == "SIGSEGV");
  CHECK(d::SignalName(SIGKILL) == "SIGKILL");
  CHECK(d::CallName(11) == "Recv");
  CHECK(d::CallName(999) == "call#999");
}

TEST_CASE("rank lists fold runs and drop repeats", "[names]") {
  CHECK(d::RankList({}) == "");
  CHECK(d::RankList({3}) == "3");
  CHECK(d::RankList({5, 0, 1, 2, 7, 2}) == "0-2,5,7");
  CHECK(d::RankList({9, 8}) == "8-9");
}
