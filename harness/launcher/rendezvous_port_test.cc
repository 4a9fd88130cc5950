#include "harness/launcher/rendezvous_port.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

namespace lockstep {
namespace {

bool Binds(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

TEST(RendezvousPortTest, CandidatesLieBelowTheAutomaticRangeAndDiffer) {
  for (uint64_t seed : {0ULL, 1ULL, 12345ULL, ~0ULL}) {
    const std::vector<int> ports = RendezvousPortCandidates({32768, 60999}, seed, 64);
    ASSERT_EQ(ports.size(), 64u);
    std::set<int> distinct(ports.begin(), ports.end());
    EXPECT_EQ(distinct.size(), ports.size());
    for (int p : ports) {
      EXPECT_GE(p, 32768 - 16384);
      EXPECT_LT(p, 32768);
    }
  }
}

TEST(RendezvousPortTest, JobsSeededApartTryDifferentPortsFirst) {
  std::set<int> firsts;
  for (uint64_t seed = 0; seed < 100; ++seed) firsts.insert(RendezvousPortCandidates({32768, 60999}, seed, 1)[0]);
  EXPECT_GT(firsts.size(), 95u);
}

TEST(RendezvousPortTest, NeverAPrivilegedPortAndNoneWithoutRoom) {
  // An automatic range starting low leaves only the unprivileged ports below it.
  for (int p : RendezvousPortCandidates({2048, 65535}, 7, 2000)) {
    EXPECT_GE(p, 1024);
    EXPECT_LT(p, 2048);
  }
  EXPECT_EQ(RendezvousPortCandidates({2048, 65535}, 7, 2000).size(), 1024u);  // each port once
  EXPECT_TRUE(RendezvousPortCandidates({1024, 65535}, 7, 10).empty());
  EXPECT_TRUE(RendezvousPortCandidates({32768, 60999}, 7, 0).empty());
}

TEST(RendezvousPortTest, ThisMachinesRangeIsRead) {
  const PortRange range = EphemeralPortRange();
  EXPECT_GT(range.low, 0);
  EXPECT_LE(range.low, range.high);
  EXPECT_LE(range.high, 65535);
}

TEST(RendezvousPortTest, PickFreePortGivesABindablePortOutsideTheAutomaticRange) {
  const PortRange range = EphemeralPortRange();
  auto port = PickFreePort();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_TRUE(Binds(*port)) << *port;
  if (range.low > 1024) {
    EXPECT_LT(*port, range.low) << "the kernel may hand out ports in [" << range.low << ", " << range.high << "]";
  }
}

}  // namespace
}  // namespace lockstep
