#include "checkers/discovery_count_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(DiscoveryCountCheckerTest, QuietWhenEveryRankRanItOnce) {
  CannedRun run(4, 3);
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

TEST(DiscoveryCountCheckerTest, NamesTheRankCountAndEveryExtraCall) {
  CannedRun run(4, 5);
  run.traces[1].discoveries.push_back(DiscoveryRecord{2, "attention_forward", 3});
  run.traces[1].discoveries.push_back(DiscoveryRecord{3, "attention_forward", 4});
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "discovery_count");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].message,
            "rank 1 ran discovery 3 times, expected 1: extra call 2 from attention_forward at step 3, "
            "call 3 from attention_forward at step 4");
  EXPECT_EQ(f[0].details.at("rank1_count"), "3");
}

TEST(DiscoveryCountCheckerTest, AllRanksInOneFindingWithTheEarliestStep) {
  CannedRun run(2, 5);
  run.traces[0].discoveries.push_back(DiscoveryRecord{2, "attention_forward", 4});
  run.traces[1].discoveries.push_back(DiscoveryRecord{2, "attention_forward", 2});
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].step, 2);
}

TEST(DiscoveryCountCheckerTest, HonoursTheExpectedCount) {
  CannedRun run(2, 3);
  run.scenario.expected_discovery_calls = 2;
  for (auto& t : run.traces) t.discoveries.push_back(DiscoveryRecord{2, "restart", 2});
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
  run.traces[1].discoveries.pop_back();
  auto f = DiscoveryCountChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_FALSE(f[0].step.has_value());
  EXPECT_EQ(f[0].message, "rank 1 ran discovery 1 time, expected 2");
}

TEST(DiscoveryCountCheckerTest, ARankThatDiedBeforeDiscoveryIsNotCounted) {
  CannedRun run(2, 3);
  run.traces[1].discoveries.clear();
  run.traces[1].steps.clear();
  run.traces[1].footer.reset();
  EXPECT_TRUE(DiscoveryCountChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
