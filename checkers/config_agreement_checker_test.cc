#include "checkers/config_agreement_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Every rank the same world: the same versions and settings, whatever differs per rank (rank,
// host, pid, device) left alone.
CannedRun Agreeing(int ranks) {
  CannedRun run(ranks, 3);
  for (RankTrace& t : run.traces) {
    t.header.backend = "nccl";
    t.header.versions = {{"libtorch", "2.11.0"}, {"nccl", "2.27.3"}, {"cuda_driver", "13.0"}};
    t.header.environment = {{"NCCL_ALGO", "Ring"}, {"TORCH_NCCL_BLOCKING_WAIT", "1"}};
    t.header.host = "node-" + std::to_string(t.header.rank);
    t.header.pid = 1000 + t.header.rank;
    t.header.device = "cuda:" + std::to_string(t.header.rank);
  }
  return run;
}

TEST(ConfigAgreementCheckerTest, QuietWhenEveryRankHasTheSameWorld) {
  EXPECT_TRUE(ConfigAgreementChecker().Check(Agreeing(4).Context()).empty());
  // A trace of the format before `environment` (2.0) records none anywhere: nothing differs.
  EXPECT_TRUE(ConfigAgreementChecker().Check(CannedRun(3, 2).Context()).empty());
  // A rank that left no trace has no say.
  CannedRun run = Agreeing(3);
  run.traces[2] = RankTrace{};
  run.traces[2].missing = true;
  EXPECT_TRUE(ConfigAgreementChecker().Check(run.Context()).empty());
  // Nor one cut before its header: it has no world to compare (its defaults are no values).
  run.traces[2] = RankTrace{};
  run.traces[2].truncated = true;
  EXPECT_TRUE(ConfigAgreementChecker().Check(run.Context()).empty());
}

TEST(ConfigAgreementCheckerTest, NamesTheOddRankOfEachSettingThatDiffers) {
  CannedRun run = Agreeing(4);
  run.traces[2].header.environment["NCCL_ALGO"] = "Tree";
  run.traces[3].header.versions["nccl"] = "2.21.5";
  auto f = ConfigAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].checker, "config_agreement");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{3}));
  EXPECT_EQ(f[0].details.at("field"), "versions.nccl");
  EXPECT_EQ(f[0].details.at("majority"), "2.27.3");
  EXPECT_EQ(f[0].message,
            "versions.nccl differs across ranks before step 1: rank 3 has \"2.21.5\" where ranks 0, 1, 2 have \"2.27.3\"");
  EXPECT_FALSE(f[0].step.has_value());
  EXPECT_EQ(f[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[1].details.at("field"), "environment.NCCL_ALGO");
}

TEST(ConfigAgreementCheckerTest, AVariableSetOnSomeRanksOnlyAndScalarsCount) {
  CannedRun run = Agreeing(3);
  run.traces[1].header.environment["NCCL_PROTO"] = "LL";
  run.traces[0].header.backend = "gloo";
  run.traces[0].header.world_size = 4;
  auto f = ConfigAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].details.at("field"), "backend");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[1].details.at("field"), "world_size");
  EXPECT_EQ(f[2].details.at("field"), "environment.NCCL_PROTO");
  EXPECT_EQ(f[2].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[2].details.at("majority"), "(unset)");
}

// Two ranks, two values: no majority, so nothing says which rank is odd: both are named.
TEST(ConfigAgreementCheckerTest, WithoutAMajorityEveryRankThatDisagreesIsNamed) {
  CannedRun run = Agreeing(2);
  run.traces[1].header.environment["NCCL_ALGO"] = "Tree";
  auto f = ConfigAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("no majority among 2 ranks"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace lockstep
