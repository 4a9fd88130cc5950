// The rank's side of the in-band comparison with thread ranks: the 16-byte gather when replicas
// agree, the tables and the checkers' findings when they do not, and a loud harness error, on
// every rank and without a hang, when the ranks' tensor lists differ.
#include "harness/rank/replica_exchange.h"

#include <gtest/gtest.h>

#include <mutex>

#include "checkers/in_band_comparison.h"
#include "harness/comm/thread_communicator.h"

namespace lockstep {
namespace {

TensorRecord Param(const std::string& name, uint64_t digest) {
  TensorRecord t;
  t.name = name;
  t.kind = TensorKind::kParam;
  t.digest = Digest128{digest, digest + 1};
  t.numel = 4;
  t.dtype = "float32";
  t.norm = static_cast<double>(digest);
  return t;
}

StepRecord Step(int rank, int odd_rank, bool extra_tensor = false) {
  StepRecord s;
  s.step = 2;
  s.tensors = {Param("w0", 10), Param("w1", rank == odd_rank ? 99 : 11)};
  if (extra_tensor) s.tensors.push_back(Param("w2", 12));
  return s;
}

// What every rank got back, by rank.
struct Outcomes {
  std::mutex mu;
  std::vector<Result<std::vector<Finding>>> by_rank;
  explicit Outcomes(int n) : by_rank(static_cast<size_t>(n), std::vector<Finding>{}) {}
};

void Exchange(int ranks, const std::function<StepRecord(int)>& step_of, Outcomes& out) {
  ThreadWorld world(ranks, std::chrono::seconds(10));
  const Scenario scenario;
  world.Run([&](Communicator& comm) {
    Result<std::vector<Finding>> r = CompareStepInBand(comm, torch::Device(torch::kCPU), scenario, step_of(comm.rank()));
    std::lock_guard<std::mutex> lock(out.mu);
    out.by_rank[static_cast<size_t>(comm.rank())] = std::move(r);
  });
}

TEST(ReplicaExchangeTest, AgreeingRanksFindNothing) {
  Outcomes out(3);
  Exchange(3, [](int r) { return Step(r, -1); }, out);
  for (const auto& r : out.by_rank) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->empty());
  }
}

TEST(ReplicaExchangeTest, AMismatchGivesEveryRankTheCheckersFinding) {
  Outcomes out(4);
  Exchange(4, [](int r) { return Step(r, 2); }, out);
  std::vector<StepRecord> by_rank;
  for (int r = 0; r < 4; ++r) by_rank.push_back(Step(r, 2));
  const std::vector<Finding> expected = JudgeStepInBand(Scenario{}, by_rank);
  ASSERT_EQ(expected.size(), 1u);
  for (const auto& r : out.by_rank) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].checker, "replica_weights");
    EXPECT_EQ((*r)[0].ranks, std::vector<int>{2});
    EXPECT_EQ((*r)[0].tensors, std::vector<std::string>{"w1"});
    EXPECT_EQ((*r)[0].message, expected[0].message);
  }
}

TEST(ReplicaExchangeTest, RanksWithOtherTensorCountsFailLoudlyOnEveryRank) {
  Outcomes out(3);
  Exchange(3, [](int r) { return Step(r, -1, /*extra_tensor=*/r == 1); }, out);
  for (const auto& r : out.by_rank) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    EXPECT_NE(r.status().message().find("rank 1 has 3 replicated tensors, rank 0 has 2"), std::string::npos)
        << r.status().ToString();
  }
}

}  // namespace
}  // namespace lockstep
