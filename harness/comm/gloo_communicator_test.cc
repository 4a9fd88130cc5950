// Single-process gloo tests: a one-rank world, two ranks as threads over one FileStore (c10d's
// own test style), and how failures come back. The multi-process ones are in collectives_mpi_test.cc.
#include "harness/comm/gloo_communicator.h"
#include "harness/core/testing/temp_dir.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/types.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace lockstep {
namespace {

using testing::TempDir;

// A port nobody listens on (bound, read, released).
int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

RendezvousOptions FileOptions(const TempDir& dir, int rank, int size) {
  RendezvousOptions o;
  o.rank = rank;
  o.world_size = size;
  o.store_file = (dir / "store").string();
  o.timeout = std::chrono::seconds(30);
  return o;
}

TEST(GlooCommunicatorTest, OneRankWorld) {
  TempDir dir("lockstep-gloo-");
  ASSERT_FALSE(dir.path().empty());
  auto comm = GlooCommunicator::Create(FileOptions(dir, 0, 1), "127.0.0.1");
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->backend_name(), "gloo");
  EXPECT_EQ((*comm)->group_name(), "world");
  torch::Tensor t = torch::arange(4, torch::kFloat32);
  ASSERT_TRUE((*comm)->AllReduce(t, ReduceOp::kAvg).ok());
  EXPECT_TRUE(torch::equal(t, torch::arange(4, torch::kFloat32)));
  torch::Tensor out = torch::empty({4}, torch::kFloat32);
  ASSERT_TRUE((*comm)->AllGather(t, out).ok());
  EXPECT_TRUE(torch::equal(out, t));
  auto child = (*comm)->Split(0, 0, "solo");
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ((*child)->group_name(), "solo");
  ASSERT_TRUE((*child)->Barrier().ok());
}

TEST(GlooCommunicatorTest, TwoRanksAsThreadsOverOneFileStore) {
  TempDir dir("lockstep-gloo-");
  ASSERT_FALSE(dir.path().empty());
  torch::Tensor results[2];
  Status status[2];
  auto rank_main = [&](int rank) {
    auto comm = GlooCommunicator::Create(FileOptions(dir, rank, 2), "127.0.0.1");
    if (!comm.ok()) {
      status[rank] = comm.status();
      return;
    }
    torch::Tensor t = torch::full({3}, rank + 1.0f);
    status[rank] = (*comm)->AllReduce(t, ReduceOp::kSum);
    torch::Tensor in = torch::arange(4, torch::kFloat32) + 10 * rank;
    torch::Tensor out = torch::empty({2}, torch::kFloat32);
    if (status[rank].ok()) status[rank] = (*comm)->ReduceScatter(in, out, ReduceOp::kSum);
    results[rank] = torch::cat({t, out});
  };
  std::thread r1(rank_main, 1);
  rank_main(0);
  r1.join();
  ASSERT_TRUE(status[0].ok()) << status[0].ToString();
  ASSERT_TRUE(status[1].ok()) << status[1].ToString();
  EXPECT_TRUE(torch::equal(results[0], torch::tensor({3.0f, 3.0f, 3.0f, 10.0f, 12.0f})));
  EXPECT_TRUE(torch::equal(results[1], torch::tensor({3.0f, 3.0f, 3.0f, 14.0f, 16.0f})));
}

TEST(GlooCommunicatorTest, GlooErrorsBecomeStatusesNamingRankAndCall) {
  TempDir dir("lockstep-gloo-");
  auto comm = GlooCommunicator::Create(FileOptions(dir, 0, 1), "127.0.0.1");
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  // Gloo has no int16 reduction; ProcessGroupGloo throws, and the caller gets a Status.
  torch::Tensor t = torch::ones({2}, torch::kInt16);
  Status s = (*comm)->AllReduce(t, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kCommunication);
  EXPECT_EQ(s.message().rfind("rank 0 group world: all_reduce: ", 0), 0u) << s.message();

  torch::Tensor wrong = torch::zeros({3});
  Status args = (*comm)->Broadcast(wrong, 1);
  EXPECT_EQ(args.message(), "rank 0 group world: broadcast: root 1 is outside the group of 1");
}

TEST(GlooCommunicatorTest, UnreachableStoreIsARendezvousErrorNamingTheRank) {
  RendezvousOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.master_addr = "127.0.0.1";
  o.master_port = UnusedPort();
  o.timeout = std::chrono::milliseconds(300);
  auto comm = GlooCommunicator::Create(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kCommunication);
  EXPECT_EQ(comm.status().message().rfind("rank 1: rendezvous at TCPStore 127.0.0.1:" + std::to_string(o.master_port), 0),
            0u)
      << comm.status().message();
}

}  // namespace
}  // namespace lockstep
