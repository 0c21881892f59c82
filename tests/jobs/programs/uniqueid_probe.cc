// uniqueid_probe: calls ncclGetUniqueId once and prints what came of it, in a
// form two NCCL libraries can be compared by:
//
//   result 0 no error
//   lasterror <text of ncclGetLastError>
//   root AF_INET 192.0.2.2
//
// `uniqueid_probe init` then makes a one-rank communicator with that id and
// prints the same two lines for ncclCommInitRank (real NCCL fails there on a
// machine without a GPU driver).
//
// Real NCCL runs this far on a machine without a GPU, so tests run it against
// real NCCL and against the simulator with the same environment and compare.

#include <arpa/inet.h>
#include <nccl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclResult_t r = ncclGetUniqueId(&id);
  std::printf("result %d %s\n", r, ncclGetErrorString(r));
  std::printf("lasterror %s\n", ncclGetLastError(nullptr));
  if (r == ncclSuccess) {
    // The id holds an 8-byte magic, then the root's socket address.
    sockaddr_storage ss;
    std::memcpy(&ss, id.internal + 8, sizeof(sockaddr_in6));
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, ip, sizeof(ip));
      std::printf("root AF_INET %s\n", ip);
    } else if (ss.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, ip, sizeof(ip));
      std::printf("root AF_INET6 %s\n", ip);
    } else {
      std::printf("root family %d\n", ss.ss_family);
    }
  }
  if (argc > 1 && std::strcmp(argv[1], "init") == 0 && r == ncclSuccess) {
    ncclComm_t comm = nullptr;
    r = ncclCommInitRank(&comm, 1, id, 0);
    std::printf("init result %d %s\n", r, ncclGetErrorString(r));
    std::printf("init lasterror %s\n", ncclGetLastError(nullptr));
    if (r == ncclSuccess) ncclCommDestroy(comm);
  }
  return 0;
}
