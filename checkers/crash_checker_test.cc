#include "checkers/crash_checker.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "checkers/testing/canned_run.h"
#include "harness/core/testing/build_paths.h"
#include "harness/trace/trace_reader.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(CrashCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 5);
  EXPECT_TRUE(CrashChecker().Check(run.Context()).empty());
}

TEST(CrashCheckerTest, NamesTheKilledRankItsSignalAndStep) {
  CannedRun run(4, 5);
  run.Cut(1, 2);  // died during step 3
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGKILL;
  run.launch.ranks[1].note = "mpirun: exited on signal 9 (Killed)";
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "crash");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].message,
            "crash: rank 1 was killed by SIGKILL (9) in step 3 (last recorded step 2) "
            "[mpirun: exited on signal 9 (Killed)]");
}

TEST(CrashCheckerTest, RanksTheLauncherStoppedAfterTheCrashAreNotNamed) {
  CannedRun run(4, 5);
  run.Cut(2, 3);
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks[2].exit_code = 139;
  for (int r : {0, 1, 3}) {
    run.Cut(r, 3);
    run.launch.ranks[r].exit_code.reset();
    run.launch.ranks[r].signal = SIGTERM;
    run.launch.ranks[r].killed_by_launcher = true;
  }
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].step, 4);
}

// gloo's survivors of a dead peer exit 3 with a communication error of their own: the peer is
// the crash, they are not.
TEST(CrashCheckerTest, SurvivorsWhoseCollectiveFailedAfterThePeerDiedAreNotNamed) {
  CannedRun run(3, 5);
  run.launch.ending = LaunchEnding::kCrash;
  run.Cut(1, 2);
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGKILL;
  for (int r : {0, 2}) {
    run.Cut(r, 2);
    run.launch.ranks[r].exit_code = 3;
    run.launch.ranks[r].failed_after_peer = true;
  }
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 3);
  // Without the mark, the same exits are crashes of their own.
  run.launch.ranks[0].failed_after_peer = false;
  f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
}

// A user's sys.exit(0) mid-run on rank 2: a clean exit, but its peers waited in a collective it
// never began. It is the crash (rank 0, whose collective failed first, was blamed).
TEST(CrashCheckerTest, ARankThatLeftItsPeersWaitingIsTheCrashEvenWithExitCodeZero) {
  CannedRun run(3, 5);
  run.launch.ending = LaunchEnding::kCrash;
  run.Cut(2, 2);
  run.launch.ranks[2].exit_code = 0;
  run.launch.ranks[2].left_peers_waiting = true;
  for (int r : {0, 1}) {
    run.Cut(r, 2);
    run.launch.ranks[r].exit_code = 1;
    run.launch.ranks[r].failed_after_peer = true;
  }
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_NE(f[0].message.find("rank 2 exited with code 0"), std::string::npos) << f[0].message;
}

// lockstep exec: the program decides how many steps (scenario.steps 0); a rank that died
// without its footer was in the step after its last record.
TEST(CrashCheckerTest, WithoutAStepCountARankWithoutAFooterDiedInTheNextStep) {
  CannedRun run(2, 5);
  run.scenario.steps = 0;
  run.launch.ending = LaunchEnding::kCrash;
  run.Cut(1, 2);
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGKILL;
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  // With its footer it had finished its own steps: the crash came at exit, after its last step.
  // Rank 0 went on to steps it never joined, so it left mid-run: a crash, not a teardown.
  run.launch.ranks[1].exit_code = 1;
  run.launch.ranks[1].signal.reset();
  run.traces[1].footer = TraceFooter{2, "ok"};
  f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  // Had rank 0 ended there too, rank 1 died after training: `teardown`'s (teardown_checker_test.cc).
  run.Cut(0, 2);
  run.traces[0].footer = TraceFooter{2, "ok"};
  EXPECT_TRUE(CrashChecker().Check(run.Context()).empty());
}

// A rank that died in teardown beside one that crashed in training: crash names the second only.
TEST(CrashCheckerTest, ARankThatDiedAfterItsFooterIsLeftToTeardown) {
  CannedRun run(3, 5);
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks[0].exit_code.reset();
  run.launch.ranks[0].signal = SIGABRT;  // after its footer: the canned run's traces all have one
  auto f = CrashChecker().Check(run.Context());
  EXPECT_TRUE(f.empty()) << f[0].message;  // not "a crash without a per-rank exit status" either
  run.Cut(2, 3);
  run.launch.ranks[2].exit_code = 139;
  f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(f[0].step, 4);
}

// A launch that saw one process (a program that started its own ranks) knows a rank died, not
// which: the ranks without a clean-exit footer are named, with the step their traces stop in.
TEST(CrashCheckerTest, ACrashWithoutPerRankStatusNamesTheUnfinishedRanksAndTheirStep) {
  CannedRun run(3, 5);
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks.clear();
  run.Cut(1, 3);
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 4);
  EXPECT_NE(f[0].message.find("rank 1 did not write a clean-exit footer: rank 1 in step 4 (last recorded step 3)"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].details.at("rank1_last_step"), "3");
}

TEST(CrashCheckerTest, ExitCodesAndSeveralRanks) {
  CannedRun run(4, 5);
  run.Cut(3, 0);
  run.Cut(2, 4);
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks[3].exit_code = 3;
  run.launch.ranks[2].signal = SIGSEGV;
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(f[0].step, 1);
  EXPECT_NE(f[0].message.find("rank 3 exited with code 3 in step 1 (last recorded step 0)"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("rank 2 was killed by SIGSEGV (11) in step 5"), std::string::npos) << f[0].message;
}

TEST(CrashCheckerTest, RanksTheLauncherKilledAreNotCrashes) {
  CannedRun run(2, 5);
  for (auto& e : run.launch.ranks) {
    e.exit_code.reset();
    e.signal = SIGKILL;
  }
  for (LaunchEnding ending : {LaunchEnding::kHang, LaunchEnding::kTimeout, LaunchEnding::kInterrupted}) {
    run.launch.ending = ending;
    EXPECT_TRUE(CrashChecker().Check(run.Context()).empty());
  }
}

TEST(CrashCheckerTest, ACrashWithoutPerRankStatusNamesRanksWithoutAFooter) {
  CannedRun run(3, 5);
  run.Cut(2, 3);
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks.clear();
  run.launch.message = "mpirun exited with code 137";
  auto f = CrashChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2}));
  EXPECT_NE(f[0].message.find("mpirun exited with code 137"), std::string::npos);
}

TEST(CrashCheckerTest, FixtureTruncatedTraceOfAKilledRank) {
  auto traces = ReadTraceDir(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "fixtures/traces/truncated_rank1_step3", 2);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  Scenario scenario;
  scenario.ranks = 2;
  scenario.steps = 4;
  LaunchReport launch;
  launch.ending = LaunchEnding::kCrash;
  RankExit e;
  e.rank = 1;
  e.signal = SIGKILL;
  launch.ranks.push_back(e);
  auto f = CrashChecker().Check(CheckContext{scenario, *traces, launch});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 3);  // its step-3 record was cut: last whole step is 2
}

}  // namespace
}  // namespace lockstep
