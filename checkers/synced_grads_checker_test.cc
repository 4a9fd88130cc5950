#include "checkers/synced_grads_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(SyncedGradsCheckerTest, FiresWhenARanksGradientWasNotReduced) {
  CannedRun run(4, 5);
  // skip_grad_allreduce at step 2 only: the gradient differs there, not later.
  run.Diverge(3, TensorKind::kGrad, "w0", 2);
  run.Diverge(3, TensorKind::kGrad, "w1", 2);
  for (int64_t s = 3; s <= 5; ++s) {
    for (const char* w : {"w0", "w1"}) {
      run.Tensor(3, s, TensorKind::kGrad, w) = run.Tensor(0, s, TensorKind::kGrad, w);
    }
  }
  auto f = SyncedGradsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "synced_grads");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].tensor, "w0");
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w0", "w1"}));
  EXPECT_EQ(f[0].ranks, (std::vector<int>{3}));
  EXPECT_EQ(f[0].details.count("later_divergent_steps"), 0u);
  EXPECT_NE(f[0].message.find("gradients after sync diverge at step 2"), std::string::npos) << f[0].message;
}

TEST(SyncedGradsCheckerTest, QuietWhenOnlyTheUpdateDiverged) {
  CannedRun run(4, 5);
  run.Diverge(1, TensorKind::kParam, "w0", 2);
  EXPECT_TRUE(SyncedGradsChecker().Check(run.Context()).empty());
}

TEST(SyncedGradsCheckerTest, FixtureRankTwoGradientsDivergeAtStepThree) {
  auto traces = ReadTraceDir(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces/rank2_diverges_at_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  LaunchReport launch;
  auto f = SyncedGradsChecker().Check(CheckContext{scenario, *traces, launch});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "fc1.weight");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
}

}  // namespace
}  // namespace lockstep
