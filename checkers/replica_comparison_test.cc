#include "checkers/replica_comparison.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(ReplicaComparisonTest, CleanRunHasNoDivergence) {
  CannedRun run(4, 5);
  for (TensorKind k : {TensorKind::kParam, TensorKind::kGrad, TensorKind::kBuffer, TensorKind::kOptimizerState}) {
    EXPECT_TRUE(FindDivergences(run.traces, k).empty()) << ToString(k);
  }
}

TEST(ReplicaComparisonTest, GroupsRanksByDigestLargestFirst) {
  CannedRun run(4, 3);
  run.Diverge(2, TensorKind::kParam, "w1", 2);
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 2u);  // steps 2 and 3
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w1");
  ASSERT_EQ(d[0].groups.size(), 2u);
  EXPECT_EQ(d[0].groups[0].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(d[0].groups[1].ranks, (std::vector<int>{2}));
  EXPECT_TRUE(d[0].has_majority);
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{2}));
}

TEST(ReplicaComparisonTest, WithoutMajorityRankZerosGroupIsTheReference) {
  CannedRun run(4, 2);
  run.Diverge(2, TensorKind::kParam, "w0", 1);
  run.Diverge(3, TensorKind::kParam, "w0", 1);
  run.Tensor(3, 1, TensorKind::kParam, "w0").digest = run.Tensor(2, 1, TensorKind::kParam, "w0").digest;
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].step, 1);
  EXPECT_FALSE(d[0].has_majority);
  EXPECT_EQ(d[0].groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{2, 3}));
}

TEST(ReplicaComparisonTest, AMissingTensorIsADivergence) {
  CannedRun run(3, 2);
  auto& tensors = run.Step(1, 2).tensors;
  tensors.erase(tensors.begin());  // w0 param
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w0");
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{1}));
  EXPECT_FALSE(d[0].groups[1].digest.has_value());
}

TEST(ReplicaComparisonTest, ShardedTensorsAreNotCompared) {
  CannedRun run(2, 2);
  for (auto& t : run.traces) {
    for (auto& s : t.steps) {
      for (auto& rec : s.tensors) {
        if (rec.kind == TensorKind::kOptimizerState) rec.replicated = false;
      }
    }
  }
  run.Diverge(1, TensorKind::kOptimizerState, "w0#momentum", 1);
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kOptimizerState).empty());
}

TEST(ReplicaComparisonTest, RanksAreComparedOnlyAtTheStepsTheyRecorded) {
  CannedRun run(3, 4);
  run.Cut(1, 2);
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kParam).empty());
}

TEST(ReplicaComparisonTest, FindingSummarizesLaterStepsAndKeepsAllTensorsOfTheFirst) {
  CannedRun run(4, 6);
  run.Diverge(1, TensorKind::kParam, "w2", 3);
  run.Diverge(1, TensorKind::kParam, "w0", 3);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "replica_weights");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "w0");  // recording order
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w0", "w2"}));
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("later_divergent_steps"), "3");
  EXPECT_EQ(f[0].details.at("last_divergent_step"), "6");
  EXPECT_NE(f[0].message.find("differs from the majority (ranks 0,2,3)"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("diverged again at 3 later steps (last: 6)"), std::string::npos) << f[0].message;
}

TEST(ReplicaComparisonTest, TwoRanksHaveNoMajorityAndTheMessageListsTheGroups) {
  CannedRun run(2, 3);
  run.Diverge(1, TensorKind::kParam, "w1", 2);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("no majority among 2 ranks"), std::string::npos) << f[0].message;
  const std::string groups = f[0].details.at("groups");
  EXPECT_NE(groups.find("rank 0: " + run.Tensor(0, 2, TensorKind::kParam, "w1").digest.ToHex()), std::string::npos) << groups;
  EXPECT_NE(groups.find("rank 1: " + run.Tensor(1, 2, TensorKind::kParam, "w1").digest.ToHex()), std::string::npos) << groups;
}

TEST(ReplicaComparisonTest, RoundingLevelDifferenceIsNamedWithItsSize) {
  CannedRun run(4, 3);
  run.Diverge(3, TensorKind::kParam, "w1", 2, /*rel_norm=*/2e-7);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("at rounding level"), std::string::npos) << f[0].message;
  const double rel = std::stod(f[0].details.at("max_rel_diff"));
  EXPECT_GT(rel, 1e-7);
  EXPECT_LT(rel, 3e-7);
}

TEST(ReplicaComparisonTest, LargeDifferenceIsNotCalledRounding) {
  CannedRun run(4, 3);
  run.Diverge(3, TensorKind::kParam, "w1", 2, /*rel_norm=*/0.25);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.find("rounding"), std::string::npos) << f[0].message;
  EXPECT_NEAR(std::stod(f[0].details.at("max_rel_diff")), 0.2, 0.01);  // |1.25x - x| / 1.25x
}

TEST(ReplicaComparisonTest, MissingAndEmptyTracesAreSkipped) {
  CannedRun run(3, 2);
  run.traces[2] = RankTrace{};
  run.traces[2].missing = true;
  EXPECT_TRUE(CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"}).empty());
}

}  // namespace
}  // namespace lockstep
