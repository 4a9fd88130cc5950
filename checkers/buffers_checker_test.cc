#include "checkers/buffers_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(BuffersCheckerTest, FiresOnUnsyncedRunningStatistics) {
  CannedRun run(4, 4);
  // unsynced_buffers: every rank keeps its own statistics from step 1.
  for (int r = 1; r < 4; ++r) run.Diverge(r, TensorKind::kBuffer, "bn.running_mean", 1, 0.01 * r);
  auto f = BuffersChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "buffers");
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].tensor, "bn.running_mean");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));  // no majority: every rank disagrees
  EXPECT_EQ(f[0].details.at("majority"), "none");
}

TEST(BuffersCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 4);
  EXPECT_TRUE(BuffersChecker().Check(run.Context()).empty());
}

TEST(BuffersCheckerTest, QuietOnOneRank) {
  CannedRun run(1, 4);
  EXPECT_TRUE(BuffersChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
