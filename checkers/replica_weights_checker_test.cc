#include "checkers/replica_weights_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

const std::filesystem::path kTraces = std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures" / "traces";

TEST(ReplicaWeightsCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 5);
  EXPECT_TRUE(ReplicaWeightsChecker().Check(run.Context()).empty());
}

TEST(ReplicaWeightsCheckerTest, FiresAtStepZeroForUnbroadcastInit) {
  CannedRun run(4, 3);
  for (int r = 1; r < 4; ++r) {
    for (const char* w : {"w0", "w1", "w2"}) run.Diverge(r, TensorKind::kParam, w, 0, 0.1 * r);
  }
  auto f = ReplicaWeightsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 0);
  EXPECT_EQ(f[0].tensor, "w0");
  EXPECT_EQ(f[0].tensors.size(), 3u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));  // no majority: every rank disagrees
  EXPECT_NE(f[0].message.find("after initialization"), std::string::npos) << f[0].message;
}

TEST(ReplicaWeightsCheckerTest, FixtureRankTwoDivergesAtStepThree) {
  auto traces = ReadTraceDir(kTraces / "rank2_diverges_at_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  scenario.ranks = 4;
  scenario.steps = 5;
  LaunchReport launch;
  auto f = ReplicaWeightsChecker().Check(CheckContext{scenario, *traces, launch});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "replica_weights");
  EXPECT_EQ(f[0].outcome, FindingOutcome::kFail);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "fc1.weight");
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].details.at("later_divergent_steps"), "2");
}

TEST(ReplicaWeightsCheckerTest, FixtureCleanRunIsQuiet) {
  auto traces = ReadTraceDir(kTraces / "clean_4rank", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  scenario.ranks = 4;
  LaunchReport launch;
  EXPECT_TRUE(ReplicaWeightsChecker().Check(CheckContext{scenario, *traces, launch}).empty());
}

TEST(ReplicaWeightsCheckerTest, IgnoresOtherKinds) {
  CannedRun run(4, 3);
  run.Diverge(1, TensorKind::kGrad, "w0", 1);
  run.Diverge(1, TensorKind::kBuffer, "bn.running_mean", 1);
  EXPECT_TRUE(ReplicaWeightsChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
