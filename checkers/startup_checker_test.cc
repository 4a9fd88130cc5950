#include "checkers/startup_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(StartupCheckerTest, QuietWhenEveryRankStarted) {
  CannedRun run(3, 4);
  EXPECT_TRUE(StartupChecker().Check(run.Context()).empty());
  // A hang or a crash after start-up is another checker's.
  for (LaunchEnding ending : {LaunchEnding::kHang, LaunchEnding::kCrash, LaunchEnding::kTimeout}) {
    run.launch.ending = ending;
    run.launch.stalled_ranks = {1};
    EXPECT_TRUE(StartupChecker().Check(run.Context()).empty()) << ToString(ending);
  }
}

TEST(StartupCheckerTest, NamesTheRanksThatNeverStarted) {
  CannedRun run(4, 4);
  run.scenario.startup_timeout_s = 30;
  run.launch.ending = LaunchEnding::kStartupTimeout;
  run.launch.stalled_ranks = {1, 3};
  run.launch.message = "start-up timeout: ranks 1,3 had not recorded step 0";
  auto f = StartupChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "startup");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_FALSE(f[0].step.has_value());
  EXPECT_EQ(f[0].message, "start-up timeout: ranks 1,3 had not recorded step 0");
  EXPECT_EQ(f[0].details.at("startup_timeout_s"), "30");
}

}  // namespace
}  // namespace lockstep
