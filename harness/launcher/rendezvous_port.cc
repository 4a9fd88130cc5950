#include "harness/launcher/rendezvous_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

namespace lockstep {
namespace {

constexpr int kWindow = 16384;
constexpr int kLowestPort = 1024;

// Binds 127.0.0.1:`port` (0: any) and closes it; the bound port, or an errno.
Result<int> BindAndRelease(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("binding 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(err));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

// splitmix64: a seed spread over the window, so that two jobs seeded a nanosecond apart start far
// from each other.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

PortRange EphemeralPortRange() {
  PortRange range{32768, 60999};
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  PortRange read;
  if (in >> read.low >> read.high && read.low > 0 && read.low <= read.high && read.high <= 65535) range = read;
  return range;
}

std::vector<int> RendezvousPortCandidates(PortRange ephemeral, uint64_t seed, int count) {
  const int high = ephemeral.low - 1;
  const int low = std::max(kLowestPort, ephemeral.low - kWindow);
  std::vector<int> ports;
  if (high < low || count <= 0) return ports;
  const uint64_t size = static_cast<uint64_t>(high - low + 1);
  // A stride coprime with the window's size visits distinct ports; odd strides are coprime with
  // any power of two, and the check covers the other sizes.
  uint64_t stride = (Mix(seed ^ 0x5bd1e995ULL) % size) | 1;
  while (std::gcd(stride, size) != 1) stride += 2;
  uint64_t at = Mix(seed) % size;
  for (int i = 0; i < count && static_cast<uint64_t>(i) < size; ++i) {
    ports.push_back(low + static_cast<int>(at));
    at = (at + stride) % size;
  }
  return ports;
}

Result<int> PickFreePort() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t seed = (static_cast<uint64_t>(::getpid()) << 32) ^ static_cast<uint64_t>(now.tv_nsec) ^
                        (static_cast<uint64_t>(now.tv_sec) << 20);
  for (int port : RendezvousPortCandidates(EphemeralPortRange(), seed, 64)) {
    Result<int> bound = BindAndRelease(port);
    if (bound.ok()) return bound;
  }
  Result<int> any = BindAndRelease(0);
  if (!any.ok()) return IoError("picking a free port on 127.0.0.1: " + any.status().message());
  return any;
}

}  // namespace lockstep
