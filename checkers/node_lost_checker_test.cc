#include "checkers/node_lost_checker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;
using testing::CannedRun;

TEST(NodeLostCheckerTest, NamesTheLostHostItsRanksAndTheStepAfterItsLast) {
  CannedRun run(4, 7);
  run.launch.ending = LaunchEnding::kNodeLost;
  run.launch.lost_hosts.push_back(LostHost{"node1", {2, 3}, 7, 11.5});
  const std::vector<Finding> f = NodeLostChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "node_lost");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(f[0].step, 8);
  EXPECT_THAT(f[0].message, HasSubstr("node lost: node1 (ranks 2,3), last heard at step 7"));
  EXPECT_EQ(f[0].details.at("host"), "node1");
}

// Quiet: any other ending, a crash of a rank included, is not a lost node.
TEST(NodeLostCheckerTest, QuietWhenNoHostWasLost) {
  CannedRun run(2, 3);
  for (LaunchEnding e : {LaunchEnding::kClean, LaunchEnding::kCrash, LaunchEnding::kHang}) {
    run.launch.ending = e;
    EXPECT_TRUE(NodeLostChecker().Check(run.Context()).empty()) << ToString(e);
  }
}

}  // namespace
}  // namespace lockstep
