#include "checkers/group_agreement_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// A group-making call as the probe records it (probe/lockstep/_auto.py).
DiscoveryRecord Made(const std::string& comm, const std::string& where = "train.py:20 in main",
                     const std::string& name = "torch.new_group", const std::string& phase = "startup",
                     int64_t step = 1) {
  DiscoveryRecord d;
  d.name = name;
  d.comm = comm;
  d.where = where;
  d.phase = phase;
  d.step = step;
  return d;
}

// Every rank makes the same groups: a mesh, then every pair (members or not), as torch asks.
CannedRun Agreeing(int ranks) {
  CannedRun run(ranks, 3);
  for (RankTrace& t : run.traces) {
    t.discoveries.push_back(Made("mesh[[0,1],[2,3]] dims=dp,tp", "train.py:12 in main", "torch.init_device_mesh"));
    t.discoveries.push_back(Made("group[0,1]"));
    t.discoveries.push_back(Made("group[2,3] gloo"));
  }
  return run;
}

TEST(GroupAgreementCheckerTest, QuietWhenEveryRankMakesTheSameGroupsInTheSameOrder) {
  EXPECT_TRUE(GroupAgreementChecker().Check(Agreeing(4).Context()).empty());
  // lockstep-rank's traces (and the probe's before `comm`) hold no group-making call to compare.
  EXPECT_TRUE(GroupAgreementChecker().Check(CannedRun(3, 2).Context()).empty());
  // The same group asked for from another line of the program is the same group.
  CannedRun moved = Agreeing(4);
  moved.traces[1].discoveries[2].where = "train.py:44 in setup";
  EXPECT_TRUE(GroupAgreementChecker().Check(moved.Context()).empty());
  // use_local_synchronization: only its members make it.
  CannedRun local = Agreeing(4);
  local.traces[0].discoveries.push_back(Made("group[0,1] local"));
  local.traces[1].discoveries.push_back(Made("group[0,1] local"));
  EXPECT_TRUE(GroupAgreementChecker().Check(local.Context()).empty());
  // A rank that died before its last group says nothing of the groups it would have made.
  CannedRun died = Agreeing(4);
  died.traces[3].discoveries.pop_back();
  died.Cut(3, 1);
  EXPECT_TRUE(GroupAgreementChecker().Check(died.Context()).empty());
  // A rank that left no trace has no say.
  CannedRun missing = Agreeing(3);
  missing.traces[2] = RankTrace{};
  missing.traces[2].missing = true;
  EXPECT_TRUE(GroupAgreementChecker().Check(missing.Context()).empty());
}

// pytorch/pytorch#130102: ranks 0 and 3 make group [0, 3] and ranks 1 and 2 group [1, 2], each
// only its own: both are each rank's first group, so they share a rendezvous.
TEST(GroupAgreementCheckerTest, EachRankMakingOnlyItsOwnGroupIsNamedAtStartUp) {
  CannedRun run(4, 3);
  for (RankTrace& t : run.traces) {
    const int r = t.header.rank;
    t.discoveries.push_back(Made(r == 0 || r == 3 ? "group[0,3]" : "group[1,2]", "hier.py:30 in main"));
  }
  auto f = GroupAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "group_agreement");
  EXPECT_EQ(f[0].step, 0);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f[0].details.at("group_index"), "1");
  EXPECT_EQ(f[0].message.find("the 1st process group each rank made differs across ranks: ranks 0,3 made "
                              "torch.new_group group[0,3] (from hier.py:30 in main); ranks 1,2 made torch.new_group "
                              "group[1,2] (from hier.py:30 in main) (no majority: every rank is named). "
                              "torch.distributed wants every rank of the world to make each group"),
            0u)
      << f[0].message;
}

TEST(GroupAgreementCheckerTest, TheOddRankOfAMajorityAndTheFirstGroupThatDiffers) {
  CannedRun run = Agreeing(4);
  // Rank 2 makes the pairs the other way round: its 2nd group is the others' 3rd. (The canned
  // run's own discovery call, lockstep-rank's topology, makes no group and is not counted.)
  std::swap(run.traces[2].discoveries[2], run.traces[2].discoveries[3]);
  auto f = GroupAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].details.at("group_index"), "2");
  EXPECT_NE(f[0].message.find("the 2nd process group each rank made differs across ranks: ranks 0,1,3 made "
                              "torch.new_group group[0,1] (from train.py:20 in main); rank 2 made torch.new_group "
                              "group[2,3] gloo (from train.py:20 in main). "),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].message.find("no majority"), std::string::npos) << f[0].message;

  // A mesh laid out otherwise on one rank is a group made otherwise.
  CannedRun mesh = Agreeing(3);
  mesh.traces[0].discoveries[1].comm = "mesh[[0,2],[1,3]] dims=dp,tp";
  auto m = GroupAgreementChecker().Check(mesh.Context());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].ranks, (std::vector<int>{0}));
  EXPECT_NE(m[0].message.find("rank 0 made torch.init_device_mesh mesh[[0,2],[1,3]] dims=dp,tp"), std::string::npos)
      << m[0].message;
}

// Only the members make a group, without use_local_synchronization (vllm-project/vime#53's
// review): the others end cleanly without it.
TEST(GroupAgreementCheckerTest, AGroupSomeRanksNeverMadeIsNamedWhenTheOthersEndedCleanly) {
  CannedRun run = Agreeing(4);
  for (int r : {0, 1}) {
    run.traces[r].discoveries.push_back(Made("group[0,1]", "sync.py:8 in connect", "torch.new_group", "step", 3));
  }
  auto f = GroupAgreementChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f[0].message.find("ranks 0,1 made a 4th process group, torch.new_group group[0,1] (from sync.py:8 in "
                              "connect), which ranks 2,3 never made (ended cleanly after 3 groups) (no majority"),
            0u)
      << f[0].message;

  // With a majority, the one rank that made it is the odd one.
  CannedRun one = Agreeing(3);
  one.traces[1].discoveries.push_back(Made("group[1]", "sync.py:8 in connect", "torch.new_group", "step", 2));
  auto g = GroupAgreementChecker().Check(one.Context());
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(g[0].step, 2);
}

}  // namespace
}  // namespace lockstep
