#include "checkers/collective_args_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checkers/collective_order_checker.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// An all_to_all of group `group` at `seq` of step 2 on `rank` (its rank in the group `group_rank`).
CollectiveRecord AllToAll(const std::string& group, uint64_t seq, int group_rank, std::vector<int64_t> in,
                          std::vector<int64_t> out) {
  CollectiveRecord c;
  c.group = group;
  c.seq = seq;
  c.op = "all_to_all";
  c.dtype = "float32";
  for (int64_t n : in) c.count += n;
  c.group_rank = group_rank;
  c.in_splits = std::move(in);
  c.out_splits = std::move(out);
  c.step = 2;
  c.start_s = 0.2;
  c.end_s = 0.21;
  return c;
}

TEST(CollectiveArgsCheckerTest, QuietWhenEverySenderSendsWhatItsReceiverExpects) {
  // A MoE dispatch whose counts were exchanged first: uneven, and each rank's output splits the
  // transpose of the input splits; the ranks' totals differ, which collective_order leaves alone
  // because the split sizes are there.
  CannedRun run(3, 3);
  const std::vector<std::vector<int64_t>> sends = {{4, 0, 8}, {12, 4, 4}, {0, 0, 16}};
  for (int r = 0; r < 3; ++r) {
    std::vector<int64_t> in = sends[static_cast<size_t>(r)];
    std::vector<int64_t> out;
    for (int i = 0; i < 3; ++i) out.push_back(sends[static_cast<size_t>(i)][static_cast<size_t>(r)]);
    run.traces[static_cast<size_t>(r)].collectives.push_back(AllToAll("moe", 0, r, in, out));
  }
  EXPECT_TRUE(CollectiveArgsChecker().Check(run.Context()).empty());
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
  // And the canned run's own collectives, with no split sizes: nothing to judge.
  EXPECT_TRUE(CollectiveArgsChecker().Check(CannedRun(2, 3).Context()).empty());
}

TEST(CollectiveArgsCheckerTest, SplitSizesAssumedInsteadOfExchangedAreNamedAtTheirBegin) {
  // examples/real_bugs/all_to_all_split_mismatch.py at step 2: rank 1 sends 4 rows (16 elements)
  // to rank 0 and 2 to itself; both ranks assume 3 and 3. The backend then fails; the begin
  // records say why. Subgroup ranks differ from world ranks: world ranks 2 and 3 are 0 and 1 here.
  CannedRun run(4, 3);
  run.traces[2].collectives.push_back(AllToAll("pg1", 5, 0, {12, 12}, {12, 12}));
  run.traces[3].collectives.push_back(AllToAll("pg1", 5, 1, {16, 8}, {12, 12}));
  auto f = CollectiveArgsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "collective_args");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(f[0].details.at("group"), "pg1");
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_EQ(f[0].details.at("pairs"), "2");
  EXPECT_EQ(f[0].message,
            "group pg1 seq 5 (step 2): all_to_all split sizes disagree between sender and receiver: rank 3 sends 16 "
            "elements to rank 2, which expects 12 from it; rank 3 sends 8 elements to itself but expects 12 (rank 2 "
            "in_splits [12, 12] out_splits [12, 12]; rank 3 in_splits [16, 8] out_splits [12, 12]; in elements, by "
            "rank in the group); both ranks of each pair are named: the records cannot tell whose count is wrong");
}

TEST(CollectiveArgsCheckerTest, ARankAloneIsJudgedOnWhatItSendsItself) {
  // Its peer was killed before its begin record: the rank's own pair still disagrees.
  CannedRun run(2, 3);
  run.traces[1].collectives.push_back(AllToAll("world", 7, 1, {16, 8}, {12, 12}));
  auto f = CollectiveArgsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, std::vector<int>{1});
  EXPECT_NE(f[0].message.find("rank 1 sends 8 elements to itself but expects 12"), std::string::npos) << f[0].message;
  // Alone and consistent: nothing.
  run.traces[1].collectives.back().out_splits = {16, 8};
  EXPECT_TRUE(CollectiveArgsChecker().Check(run.Context()).empty());
}

TEST(CollectiveArgsCheckerTest, OneFindingPerGroupAtItsFirstDisagreement) {
  CannedRun run(2, 3);
  for (uint64_t seq : {0, 1, 2}) {
    const bool bad = seq >= 1;
    run.traces[0].collectives.push_back(AllToAll("ep", seq, 0, {2, 2}, {2, bad ? 3 : 2}));
    run.traces[1].collectives.push_back(AllToAll("ep", seq, 1, {2, 2}, {2, 2}));
  }
  auto f = CollectiveArgsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("collective_seq"), "1");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
}

TEST(CollectiveArgsCheckerTest, AReduceOpOrBroadcastRootThatDiffersIsCollectiveOrdersFinding) {
  // Fields that must be equal on every rank: collective_order names them; collective_args, which
  // pairs split sizes, says nothing of them.
  CannedRun run(3, 3);
  run.traces[1].collectives[3].reduce = "max";  // an all_reduce of step 2
  run.traces[2].collectives[0].root = 2;        // the initial broadcast
  EXPECT_TRUE(CollectiveArgsChecker().Check(run.Context()).empty());
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("root 2 vs 0"), std::string::npos) << f[0].message;
  run.traces[2].collectives[0].root = 0;
  f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("reduce max vs avg"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace lockstep
