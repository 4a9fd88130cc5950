#include "checkers/hang_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Rank `hung` stops before its first collective of `step`; the others enter it and wait.
void HangAt(CannedRun& run, int hung, int64_t step) {
  for (int r = 0; r < static_cast<int>(run.traces.size()); ++r) {
    run.Cut(r, step - 1);
    if (r == hung) continue;
    CollectiveRecord c;
    c.group = "world";
    c.seq = run.traces[r].collectives.back().seq + 1;
    c.op = "all_reduce";
    c.dtype = "float32";
    c.count = 64;
    c.reduce = "avg";
    c.step = step;
    c.start_s = 0.1 * step;
    run.traces[r].collectives.push_back(c);  // no end_s: waiting
  }
  run.launch.ending = LaunchEnding::kHang;
  run.launch.ranks.clear();
}

TEST(HangCheckerTest, QuietUnlessTheLauncherSawAHang) {
  CannedRun run(4, 5);
  EXPECT_TRUE(HangChecker().Check(run.Context()).empty());
  HangAt(run, 1, 3);
  run.launch.ending = LaunchEnding::kCrash;
  EXPECT_TRUE(HangChecker().Check(run.Context()).empty());
}

TEST(HangCheckerTest, NamesTheRankThatNeverReachedTheCollective) {
  CannedRun run(4, 5);
  HangAt(run, 2, 3);
  auto f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "hang");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].details.at("group"), "world");
  EXPECT_EQ(f[0].details.at("collective_seq"), "5");
  EXPECT_EQ(f[0].details.at("waiting_ranks"), "0,1,3");
  EXPECT_EQ(f[0].details.at("rank2_last_step"), "2");
  EXPECT_EQ(f[0].message,
            "hang: ranks 0,1,3 wait in world seq 5 (all_reduce(float32, 64), step 3); rank 2 never reached it "
            "(rank 2: its last collective in world was seq 4 (step 2), last recorded step 2)");
}

// Trace 2.6: where the waiting ranks called the collective, when they all say the same place,
// and where the rank behind called its last one.
TEST(HangCheckerTest, SaysWhereTheCollectivesWereCalled) {
  CannedRun run(4, 5);
  HangAt(run, 2, 3);
  for (int r : {0, 1, 3}) run.traces[r].collectives.back().where = "train.py:30 in main";
  run.traces[2].collectives.back().where = "train.py:41 in log_metrics < train.py:33 in main";
  auto f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.at("called_at"), "train.py:30 in main");
  EXPECT_EQ(f[0].message,
            "hang: ranks 0,1,3 wait in world seq 5 (all_reduce(float32, 64), step 3, called at train.py:30 in main); "
            "rank 2 never reached it (rank 2: its last collective in world was seq 4 (step 2, called at "
            "train.py:41 in log_metrics < train.py:33 in main), last recorded step 2)");

  // Waiting ranks at different places: none is said for them.
  run.traces[3].collectives.back().where = "train.py:31 in main";
  f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].details.count("called_at"), 0u);
  EXPECT_NE(f[0].message.find("wait in world seq 5 (all_reduce(float32, 64), step 3); "), std::string::npos)
      << f[0].message;
}

// Slices {0,1} and {2,3}, cross groups {0,2} and {1,3}. Rank 1 hangs before slice0 seq 0; rank 0
// waits for it there; ranks 2 and 3 finished their slice and wait in the cross groups, rank 2 for
// rank 0 (itself waiting) and rank 3 for rank 1. Only rank 1 is the cause.
TEST(HangCheckerTest, ARankThatWaitsElsewhereIsNotTheCause) {
  CannedRun run(4, 1);
  auto add = [&](int rank, const std::string& group, double start, bool ended) {
    CollectiveRecord c;
    c.group = group;
    c.seq = 0;
    c.op = "reduce_scatter";
    c.dtype = "float32";
    c.count = 16;
    c.step = 2;
    c.start_s = start;
    if (ended) c.end_s = start + 0.01;
    run.traces[rank].collectives.push_back(c);
  };
  add(0, "slice0", 0.20, false);
  add(2, "slice1", 0.20, true);
  add(3, "slice1", 0.20, true);
  add(2, "cross0", 0.25, false);
  add(3, "cross1", 0.26, false);
  for (int r = 0; r < 4; ++r) run.traces[r].footer.reset();
  run.launch.ending = LaunchEnding::kHang;
  auto f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("group"), "slice0");
  EXPECT_EQ(f[0].details.at("open_collectives"), "3");
  EXPECT_EQ(f[0].step, 2);
}

TEST(HangCheckerTest, EveryoneInsideACollectiveThatNeverCompletes) {
  CannedRun run(2, 3);
  HangAt(run, -1, 2);
  auto f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f[0].message.find("every member entered it but it never completed"), std::string::npos) << f[0].message;
}

TEST(HangCheckerTest, WithoutOpenCollectivesItFallsBackToTheLauncher) {
  CannedRun run(3, 4);
  run.Cut(0, 2);
  run.Cut(1, 2);
  run.Cut(2, 1);
  run.launch.ending = LaunchEnding::kHang;
  run.launch.stalled_ranks = {2};
  auto f = HangChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].step, 2);
  EXPECT_NE(f[0].message.find("no rank is inside a collective"), std::string::npos) << f[0].message;
}

TEST(HangCheckerTest, FixtureRankOneHangsAtStepThree) {
  auto traces = ReadTraceDir(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces/hang_rank1_step3", 4);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  scenario.ranks = 4;
  scenario.steps = 5;
  LaunchReport launch;
  launch.ending = LaunchEnding::kHang;
  launch.stalled_ranks = {1};
  auto f = HangChecker().Check(CheckContext{scenario, *traces, launch});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].details.at("collective_seq"), "8");
  EXPECT_EQ(f[0].details.at("waiting_ranks"), "0,2,3");
}

}  // namespace
}  // namespace lockstep
