#include "checkers/collective_order_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

CollectiveRecord* Seq(CannedRun& run, int rank, const std::string& group, uint64_t seq) {
  for (auto& c : run.traces[rank].collectives) {
    if (c.group == group && c.seq == seq) return &c;
  }
  return nullptr;
}

TEST(CollectiveOrderCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 5);
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
}

TEST(CollectiveOrderCheckerTest, NamesTheFirstDifferingSeqFieldByField) {
  CannedRun run(4, 5);
  CollectiveRecord* c = Seq(run, 1, "world", 5);  // step 3's first all_reduce
  ASSERT_NE(c, nullptr);
  c->op = "all_gather";
  c->count = 4096;
  c->reduce = "";
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "collective_order");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("group"), "world");
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_EQ(f[0].details.at("diff"), "op all_gather vs all_reduce, count 4096 vs 64, reduce none vs avg");
  EXPECT_EQ(f[0].message,
            "group world seq 5 (step 3): rank 1 runs all_gather(float32, 4096) but ranks 0,2,3 run "
            "all_reduce(float32, 64, avg) (op all_gather vs all_reduce, count 4096 vs 64, reduce none vs avg)");
}

TEST(CollectiveOrderCheckerTest, AnExtraCollectiveOnOneRank) {
  CannedRun run(4, 4);
  CollectiveRecord extra;
  extra.op = "all_reduce";
  extra.dtype = "float32";
  extra.count = 1;
  extra.reduce = "sum";
  extra.step = 2;
  run.InsertCollective(2, 5, extra);  // after step 2's two all_reduces (seqs 3, 4)
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_NE(f[0].message.find("rank 2 runs all_reduce(float32, 1, sum)"), std::string::npos) << f[0].message;
}

TEST(CollectiveOrderCheckerTest, AnExtraCollectiveAtTheEndOfACleanRun) {
  CannedRun run(3, 2);
  CollectiveRecord extra;
  extra.op = "barrier";
  extra.step = 2;
  run.InsertCollective(0, 5, extra);  // seqs 0..4 exist on every rank
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("rank 0 runs an extra collective barrier() at step 2; ranks 1,2 issued only 5"),
            std::string::npos)
      << f[0].message;
}

TEST(CollectiveOrderCheckerTest, ACleanlyExitedRankWithAShorterSequence) {
  CannedRun run(4, 3);
  run.traces[3].collectives.pop_back();  // exited with a footer, one all_reduce short
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{3}));
  EXPECT_EQ(f[0].step, 3);
  EXPECT_NE(f[0].message.find("rank 3 issued only 6 collectives in group world and exited"), std::string::npos)
      << f[0].message;
}

// Lightning#19106 in a multi-slice job: rank 1's extra world barrier at step 2 pairs with nothing,
// the others finish step 2 and then wait for rank 1 in later collectives; nobody exits cleanly.
TEST(CollectiveOrderCheckerTest, AnExtraCollectiveThatHungTheOthers) {
  CannedRun run(4, 4);
  for (int r = 0; r < 4; ++r) run.Cut(r, r == 1 ? 1 : 2);  // rank 1 never finished step 2
  // With slices, a step's gradient sync runs in the slice groups, not in world.
  for (int r : {0, 2, 3}) {
    for (auto& c : run.traces[r].collectives) {
      if (c.step == 2) c.group = "slice" + std::to_string(r / 2);
    }
  }
  CollectiveRecord extra;
  extra.op = "barrier";
  extra.step = 2;
  run.InsertCollective(1, 3, extra);  // seqs 0..2 belong to steps 0 and 1 on every rank
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("went on past that step"), std::string::npos) << f[0].message;
}

TEST(CollectiveOrderCheckerTest, ARankThatDiedIsNotAnOrderProblem) {
  CannedRun run(4, 5);
  run.Cut(2, 2);
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());
}

TEST(CollectiveOrderCheckerTest, WorldEmptyOnOneRankIsAFinding) {
  CannedRun run(3, 2);
  run.traces[1].collectives.clear();
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("collective_seq"), "0");
}

TEST(CollectiveOrderCheckerTest, SubGroupsAreComparedAmongTheirMembers) {
  CannedRun run(4, 2);
  for (int r = 0; r < 4; ++r) {
    for (uint64_t seq = 0; seq < 3; ++seq) {
      CollectiveRecord c;
      c.group = "slice" + std::to_string(r / 2);
      c.seq = seq;
      c.op = "reduce_scatter";
      c.dtype = "float32";
      c.count = 16;
      c.reduce = "sum";
      c.step = static_cast<int64_t>(seq);
      c.end_s = 1.0;
      run.traces[r].collectives.push_back(c);
    }
  }
  EXPECT_TRUE(CollectiveOrderChecker().Check(run.Context()).empty());

  run.traces[3].collectives.back().count = 32;  // slice1 seq 2 on rank 3
  auto f = CollectiveOrderChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("group"), "slice1");
  EXPECT_EQ(f[0].details.at("collective_seq"), "2");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));  // two members, no majority: both named
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("every rank that disagrees is named"), std::string::npos) << f[0].message;
}

TEST(CollectiveOrderCheckerTest, FixtureHangIsNotAnOrderProblem) {
  auto traces = ReadTraceDir(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces/hang_rank1_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  LaunchReport launch;
  EXPECT_TRUE(CollectiveOrderChecker().Check(CheckContext{scenario, *traces, launch}).empty());
}

}  // namespace
}  // namespace lockstep
