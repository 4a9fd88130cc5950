#include "checkers/optimizer_state_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(OptimizerStateCheckerTest, FiresOnReplicatedStateThatDiffers) {
  CannedRun run(4, 4);
  run.Diverge(0, TensorKind::kOptimizerState, "w2#momentum", 3);
  auto f = OptimizerStateChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "optimizer_state");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "w2#momentum");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
}

TEST(OptimizerStateCheckerTest, QuietOnShardedState) {
  CannedRun run(4, 4);
  for (int r = 0; r < 4; ++r) {
    for (auto& s : run.traces[r].steps) {
      for (auto& t : s.tensors) {
        if (t.kind == TensorKind::kOptimizerState) t.replicated = false;
      }
    }
    run.Diverge(r, TensorKind::kOptimizerState, "w0#momentum", 1);  // each rank its own shard
  }
  EXPECT_TRUE(OptimizerStateChecker().Check(run.Context()).empty());
}

TEST(OptimizerStateCheckerTest, QuietOnACleanRun) {
  CannedRun run(2, 4);
  EXPECT_TRUE(OptimizerStateChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
