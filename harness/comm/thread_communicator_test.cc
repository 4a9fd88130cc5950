#include "harness/comm/thread_communicator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstring>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep {
namespace {

// Rank r's contribution: (r + 1) * (i + 1) in `dtype`, small enough for every dtype used.
torch::Tensor Ramp(int rank, int64_t n, torch::Dtype dtype) {
  return (torch::arange(1, n + 1, torch::kInt64) * (rank + 1)).to(dtype);
}

// Seeded per rank with its own generator: the ranks are threads sharing torch's default one.
torch::Tensor RandomNormal(uint64_t seed, int64_t n) {
  return torch::randn({n}, at::detail::createCPUGenerator(seed), torch::kFloat32);
}

// Runs fn on every rank and returns what each rank produced, for cross-rank comparisons.
std::vector<torch::Tensor> Collect(ThreadWorld& world, const std::function<torch::Tensor(Communicator&)>& fn) {
  std::vector<torch::Tensor> out(world.size());
  world.Run([&](Communicator& comm) { out[comm.rank()] = fn(comm); });
  return out;
}

void ExpectAllBitwiseEqual(const std::vector<torch::Tensor>& ts) {
  for (size_t r = 1; r < ts.size(); ++r) {
    ASSERT_EQ(ts[r].scalar_type(), ts[0].scalar_type());
    ASSERT_EQ(ts[r].numel(), ts[0].numel());
    EXPECT_EQ(std::memcmp(ts[r].data_ptr(), ts[0].data_ptr(), ts[0].nbytes()), 0) << "rank " << r << " differs";
  }
}

class ThreadAllReduceTest : public ::testing::TestWithParam<torch::Dtype> {};

TEST_P(ThreadAllReduceTest, SumAvgMaxHaveClosedForms) {
  const torch::Dtype dtype = GetParam();
  const int n = 4;
  const int64_t len = 6;
  ThreadWorld world(n);
  world.Run([&](Communicator& comm) {
    torch::Tensor sum = Ramp(comm.rank(), len, dtype);
    ASSERT_TRUE(comm.AllReduce(sum, ReduceOp::kSum).ok());
    // sum over r of (r+1)(i+1) = 10 (i+1)
    EXPECT_TRUE(torch::equal(sum, Ramp(9, len, dtype))) << sum;

    torch::Tensor avg = Ramp(comm.rank(), len, dtype);
    ASSERT_TRUE(comm.AllReduce(avg, ReduceOp::kAvg).ok());
    // 10 (i+1) / 4: exact in floating types, truncated in integer ones (as ncclAvg).
    torch::Tensor expected = torch::is_floating_point(avg)
                                 ? (torch::arange(1, len + 1, torch::kFloat64) * 2.5).to(dtype)
                                 : torch::div(torch::arange(1, len + 1, torch::kInt64) * 10, 4, "trunc").to(dtype);
    EXPECT_TRUE(torch::equal(avg, expected)) << avg;

    torch::Tensor max = Ramp(comm.rank(), len, dtype);
    ASSERT_TRUE(comm.AllReduce(max, ReduceOp::kMax).ok());
    EXPECT_TRUE(torch::equal(max, Ramp(n - 1, len, dtype))) << max;
  });
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ThreadAllReduceTest,
                         ::testing::Values(torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
                                           torch::kInt64, torch::kInt32, torch::kUInt8),
                         [](const ::testing::TestParamInfo<torch::Dtype>& info) {
                           return std::string(c10::toString(info.param));
                         });

TEST(ThreadCommunicatorTest, RandomFloatSumsAreBitwiseEqualOnAllRanksAndRuns) {
  auto run = [] {
    ThreadWorld world(3);
    return Collect(world, [](Communicator& comm) {
      torch::Tensor t = RandomNormal(100 + comm.rank(), 1000);
      EXPECT_TRUE(comm.AllReduce(t, ReduceOp::kAvg).ok());
      return t;
    });
  };
  std::vector<torch::Tensor> first = run();
  ExpectAllBitwiseEqual(first);
  std::vector<torch::Tensor> second = run();
  EXPECT_TRUE(torch::equal(first[0], second[0])) << "deterministic across runs";
  // And equal to the rank-order sum computed here.
  torch::Tensor expected = torch::zeros({1000}, torch::kFloat32);
  for (int r = 0; r < 3; ++r) {
    torch::Tensor x = RandomNormal(100 + r, 1000);
    expected = r == 0 ? x.clone() : expected.add_(x);
  }
  expected.div_(3);
  EXPECT_TRUE(torch::equal(first[0], expected));
}

TEST(ThreadCommunicatorTest, AllGatherPlacesRankChunksInOrder) {
  for (torch::Dtype dtype : {torch::kFloat32, torch::kInt64, torch::kUInt8, torch::kBool}) {
    ThreadWorld world(3);
    std::vector<torch::Tensor> out = Collect(world, [&](Communicator& comm) {
      torch::Tensor in = torch::full({2, 2}, comm.rank() + 1, torch::kInt64).to(dtype);
      torch::Tensor gathered = torch::empty({3 * 4}, in.options());
      EXPECT_TRUE(comm.AllGather(in, gathered).ok());
      return gathered;
    });
    torch::Tensor expected =
        torch::cat({torch::full({4}, 1, torch::kInt64), torch::full({4}, 2, torch::kInt64), torch::full({4}, 3, torch::kInt64)})
            .to(dtype);
    for (const auto& t : out) EXPECT_TRUE(torch::equal(t, expected)) << t;
  }
}

TEST(ThreadCommunicatorTest, ReduceScatterGivesEachRankItsReducedChunk) {
  ThreadWorld world(4);
  world.Run([](Communicator& comm) {
    // Element j of rank r's input is r * 100 + j.
    torch::Tensor in = torch::arange(8, torch::kFloat64) + comm.rank() * 100;
    torch::Tensor out = torch::empty({2}, torch::kFloat64);
    ASSERT_TRUE(comm.ReduceScatter(in, out, ReduceOp::kSum).ok());
    const double j0 = 2 * comm.rank();
    EXPECT_EQ(out[0].item<double>(), 600 + 4 * j0);
    EXPECT_EQ(out[1].item<double>(), 600 + 4 * (j0 + 1));

    torch::Tensor avg = torch::empty({2}, torch::kFloat64);
    ASSERT_TRUE(comm.ReduceScatter(in, avg, ReduceOp::kAvg).ok());
    EXPECT_EQ(avg[0].item<double>(), 150 + j0);

    torch::Tensor max = torch::empty({2}, torch::kFloat64);
    ASSERT_TRUE(comm.ReduceScatter(in, max, ReduceOp::kMax).ok());
    EXPECT_EQ(max[1].item<double>(), 300 + j0 + 1);
  });
}

TEST(ThreadCommunicatorTest, BroadcastCopiesTheRootsTensor) {
  ThreadWorld world(4);
  world.Run([](Communicator& comm) {
    torch::Tensor t = torch::full({5}, comm.rank(), torch::kInt32);
    ASSERT_TRUE(comm.Broadcast(t, 2).ok());
    EXPECT_TRUE(torch::equal(t, torch::full({5}, 2, torch::kInt32)));
  });
}

TEST(ThreadCommunicatorTest, BarrierHoldsEveryRankUntilAllArrive) {
  ThreadWorld world(4);
  std::atomic<int> arrived{0};
  world.Run([&](Communicator& comm) {
    if (comm.rank() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    arrived++;
    ASSERT_TRUE(comm.Barrier().ok());
    EXPECT_EQ(arrived.load(), 4);
  });
}

TEST(ThreadCommunicatorTest, SplitIntoSlicesAndCrossGroups) {
  ThreadWorld world(4);
  world.Run([](Communicator& comm) {
    const int r = comm.rank();
    auto slice = comm.Split(r / 2, r, "slice" + std::to_string(r / 2));
    ASSERT_TRUE(slice.ok()) << slice.status().ToString();
    auto cross = comm.Split(r % 2, r, "cross" + std::to_string(r % 2));
    ASSERT_TRUE(cross.ok()) << cross.status().ToString();
    EXPECT_EQ((*slice)->size(), 2);
    EXPECT_EQ((*slice)->rank(), r % 2);
    EXPECT_EQ((*slice)->group_name(), "slice" + std::to_string(r / 2));
    EXPECT_EQ((*cross)->rank(), r / 2);

    torch::Tensor t = torch::full({1}, static_cast<int64_t>(1) << r, torch::kInt64);
    ASSERT_TRUE((*slice)->AllReduce(t, ReduceOp::kSum).ok());
    EXPECT_EQ(t.item<int64_t>(), r < 2 ? 0b0011 : 0b1100);
    torch::Tensor u = torch::full({1}, static_cast<int64_t>(1) << r, torch::kInt64);
    ASSERT_TRUE((*cross)->AllReduce(u, ReduceOp::kSum).ok());
    EXPECT_EQ(u.item<int64_t>(), r % 2 == 0 ? 0b0101 : 0b1010);
    // The world still works after splitting.
    ASSERT_TRUE(comm.Barrier().ok());
  });
}

TEST(ThreadCommunicatorTest, SplitOrdersMembersByKey) {
  ThreadWorld world(3);
  world.Run([](Communicator& comm) {
    auto reversed = comm.Split(0, -comm.rank(), "reversed");
    ASSERT_TRUE(reversed.ok());
    EXPECT_EQ((*reversed)->rank(), 2 - comm.rank());
    torch::Tensor t = torch::full({1}, comm.rank(), torch::kInt64);
    ASSERT_TRUE((*reversed)->Broadcast(t, 0).ok());
    EXPECT_EQ(t.item<int64_t>(), 2) << "member 0 of the new group is world rank 2";
  });
}

TEST(ThreadCommunicatorTest, InjectedFaultFailsTheCallOnEveryRankAndNamesTheRank) {
  ThreadWorld world(3);
  world.FailNextCall(1, "injected: link down");
  std::vector<Status> first(3);
  world.Run([&](Communicator& comm) {
    torch::Tensor t = torch::ones({4});
    first[comm.rank()] = comm.AllReduce(t, ReduceOp::kSum);
    EXPECT_TRUE(torch::equal(t, torch::ones({4}))) << "a failed collective changes nothing";
    // The group is still usable afterwards, and the fault was consumed.
    ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
    EXPECT_TRUE(torch::equal(t, torch::full({4}, 3.0f)));
  });
  EXPECT_EQ(first[1].code(), StatusCode::kCommunication);
  EXPECT_EQ(first[1].message(), "rank 1 group world: all_reduce: injected: link down");
  EXPECT_EQ(first[0].message(), "rank 0 group world: all_reduce: peer rank 1 failed: injected: link down");
  EXPECT_EQ(first[2].code(), StatusCode::kCommunication);
}

TEST(ThreadCommunicatorTest, FaultInASubGroupNamesTheWorldRank) {
  ThreadWorld world(4);
  world.FailNextCall(3, "boom");
  world.Run([&](Communicator& comm) {
    auto slice = comm.Split(comm.rank() / 2, 0, "slice" + std::to_string(comm.rank() / 2));
    ASSERT_TRUE(slice.ok());
    Status s = (*slice)->Barrier();
    if (comm.rank() < 2) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else if (comm.rank() == 3) {
      EXPECT_EQ(s.message(), "rank 3 group slice1: barrier: boom");
    } else {
      EXPECT_EQ(s.message(), "rank 2 group slice1: barrier: peer rank 3 failed: boom");
    }
  });
}

TEST(ThreadCommunicatorTest, DifferentCollectivesOnDifferentRanksAreAMismatch) {
  ThreadWorld world(2);
  std::vector<Status> s(2);
  world.Run([&](Communicator& comm) {
    torch::Tensor t = torch::zeros({8});
    s[comm.rank()] = comm.rank() == 0 ? comm.AllReduce(t, ReduceOp::kSum) : comm.Broadcast(t, 0);
  });
  for (const Status& st : s) {
    EXPECT_EQ(st.code(), StatusCode::kCommunication);
    EXPECT_NE(st.message().find("collective mismatch: rank 0 calls all_reduce(float32 x 8, sum) but rank 1 calls "
                                "broadcast(float32 x 8, root 0)"),
              std::string::npos)
        << st.message();
  }
}

TEST(ThreadCommunicatorTest, ARankThatLeavesFailsItsPeersInsteadOfHanging) {
  ThreadWorld world(2);
  Status waiting;
  world.Run([&](Communicator& comm) {
    if (comm.rank() == 1) return;  // never joins the barrier
    waiting = comm.Barrier();
  });
  EXPECT_EQ(waiting.code(), StatusCode::kCommunication);
  EXPECT_NE(waiting.message().find("rank 1 left"), std::string::npos) << waiting.message();
}

TEST(ThreadCommunicatorTest, ACollectiveThatNeverCompletesTimesOut) {
  ThreadWorld world(3, std::chrono::milliseconds(200));
  std::vector<Status> s(3);
  world.Run([&](Communicator& comm) {
    if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(800));
    s[comm.rank()] = comm.Barrier();
  });
  // Which early rank's clock runs out first is up to the scheduler; both fail and one says why.
  EXPECT_FALSE(s[0].ok());
  EXPECT_FALSE(s[1].ok());
  const std::string& why = s[0].code() == StatusCode::kTimeout ? s[0].message() : s[1].message();
  EXPECT_NE(why.find("timed out after 200 ms waiting for ranks [2]"), std::string::npos) << why;
  EXPECT_NE(s[2].message().find("group unusable"), std::string::npos) << s[2].message();
}

TEST(ThreadCommunicatorTest, BadArgumentsNameRankGroupAndCall) {
  ThreadWorld world(2);
  std::vector<Status> s(2);
  world.Run([&](Communicator& comm) {
    torch::Tensor in = torch::zeros({3});
    torch::Tensor out = torch::zeros({5});
    s[comm.rank()] = comm.AllGather(in, out);
  });
  EXPECT_EQ(s[1].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s[1].message(), "rank 1 group world: all_gather: output has 5 elements, expected 2 x 3");
}

TEST(ThreadCommunicatorTest, JoinLetsCallersRunTheirOwnThreads) {
  ThreadWorld world(2);
  auto c0 = world.Join(0);
  auto c1 = world.Join(1);
  torch::Tensor a = torch::full({2}, 1.0);
  torch::Tensor b = torch::full({2}, 2.0);
  Status s1;
  std::thread other([&] { s1 = c1->AllReduce(b, ReduceOp::kSum); });
  Status s0 = c0->AllReduce(a, ReduceOp::kSum);
  other.join();
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_TRUE(torch::equal(a, torch::full({2}, 3.0)));
  EXPECT_TRUE(torch::equal(b, torch::full({2}, 3.0)));
  EXPECT_EQ(c0->backend_name(), "threads");
}

}  // namespace
}  // namespace lockstep
