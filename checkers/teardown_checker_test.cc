#include "checkers/teardown_checker.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "checkers/checker_run.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Rank 1 finished its 5 steps, wrote its footer, then died of SIGABRT (a backend's thread meeting
// a finalizing interpreter); rank 0 exited cleanly.
CannedRun AbortAfterTheFooter() {
  CannedRun run(2, 5);
  run.scenario.steps = 0;  // lockstep exec: the program decides how many
  run.launch.ending = LaunchEnding::kCrash;
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGABRT;
  run.launch.ranks[1].note = "killed by signal 6 (Aborted)";
  return run;
}

TEST(TeardownCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 5);
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
}

TEST(TeardownCheckerTest, NamesARankThatDiedAfterItsFooterAndSaysTrainingCompleted) {
  CannedRun run = AbortAfterTheFooter();
  auto f = TeardownChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "teardown");
  EXPECT_EQ(f[0].outcome, FindingOutcome::kFail);  // a failure still: CI must see it
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].step, 5);
  EXPECT_EQ(f[0].message,
            "teardown: rank 1 was killed by SIGABRT (6) after its last step (5) and its clean-exit footer "
            "[killed by signal 6 (Aborted)]: it had finished training and died on the way out (an exit handler, "
            "process-group destruction, the interpreter's finalization); training completed: every rank's trace "
            "holds its last step (5) and its clean-exit footer, so every step's records are complete");
  EXPECT_EQ(f[0].details.at("training_completed"), "true");
  EXPECT_EQ(f[0].details.at("rank1_last_step"), "5");

  // The run's verdict: teardown's finding alone; crash, which judges the launch ending, is quiet.
  const CheckerRun checked = RunCheckers({"crash", "teardown", "replica_weights"}, run.Context(), {});
  ASSERT_EQ(checked.findings.size(), 1u);
  EXPECT_EQ(checked.findings[0].checker, "teardown");
  EXPECT_EQ(checked.expectation.outcome, Outcome::kFail);
  // Left out of the checks (a scenario's `checks:`), the run passes: only crash judges the ending.
  EXPECT_EQ(RunCheckers({"crash", "replica_weights"}, run.Context(), {}).expectation.outcome, Outcome::kPass);
}

TEST(TeardownCheckerTest, AnExitCodeAfterTheFooterIsTeardownToo) {
  CannedRun run = AbortAfterTheFooter();
  run.launch.ranks[1].signal.reset();
  run.launch.ranks[1].exit_code = 1;
  run.launch.ranks[1].note.clear();
  auto f = TeardownChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("rank 1 exited with code 1 after its last step (5)"), std::string::npos) << f[0].message;
}

// The launcher stopped rank 0 when rank 1 died, before rank 0's footer: its records may stop
// short, and the finding says so instead of claiming them complete.
TEST(TeardownCheckerTest, SaysWhichRanksRecordsStopShort) {
  CannedRun run = AbortAfterTheFooter();
  run.Cut(0, 4);
  run.launch.ranks[0].exit_code.reset();
  run.launch.ranks[0].signal = SIGTERM;
  run.launch.ranks[0].killed_by_launcher = true;
  auto f = TeardownChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].message.find("but rank 0's trace ends at step 4 without its footer (stopped by the launcher): their "
                              "records may stop short of the end"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].details.at("training_completed"), "false");
}

// A crash in training stays `crash`'s: no footer, so no teardown.
TEST(TeardownCheckerTest, QuietOnACrashInTraining) {
  CannedRun run(3, 5);
  run.launch.ending = LaunchEnding::kCrash;
  run.Cut(1, 2);
  run.launch.ranks[1].exit_code.reset();
  run.launch.ranks[1].signal = SIGKILL;
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
  const CheckerRun checked = RunCheckers({"crash", "teardown"}, run.Context(), {});
  ASSERT_EQ(checked.findings.size(), 1u);
  EXPECT_EQ(checked.findings[0].checker, "crash");
  EXPECT_EQ(checked.findings[0].step, 3);
}

// A rank that left mid-run with a clean footer and a non-zero exit code (a user's sys.exit(3) in
// the loop; the probe writes the footer at any clean exit): its peers began a collective it never
// began, and failed. A crash in training, never a teardown.
TEST(TeardownCheckerTest, ARankThatLeftMidRunWithItsFooterIsACrash) {
  CannedRun run(2, 5);
  run.scenario.steps = 0;
  run.launch.ending = LaunchEnding::kCrash;
  run.Cut(1, 2);
  run.traces[1].footer = TraceFooter{2, "ok"};
  run.launch.ranks[1].exit_code = 3;
  run.Cut(0, 2);
  CollectiveRecord waited;  // rank 0's first all-reduce of step 3, which rank 1 never began
  waited.group = "world";
  waited.seq = run.traces[0].collectives.back().seq + 1;
  waited.op = "all_reduce";
  waited.step = 3;
  run.traces[0].collectives.push_back(waited);
  run.traces[0].footer = TraceFooter{2, "communication: Connection closed by peer"};
  run.launch.ranks[0].exit_code = 1;
  run.launch.ranks[0].failed_after_peer = true;
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
  const CheckerRun checked = RunCheckers({"crash", "teardown"}, run.Context(), {});
  ASSERT_EQ(checked.findings.size(), 1u);
  EXPECT_EQ(checked.findings[0].checker, "crash");
  EXPECT_EQ(checked.findings[0].ranks, (std::vector<int>{1}));
  // Had rank 1 begun that collective too, nobody waited on it: its death came after training.
  CollectiveRecord joined = waited;
  run.traces[1].collectives.push_back(joined);
  EXPECT_EQ(TeardownChecker().Check(run.Context()).size(), 1u);
}

// Not a death of its own: the survivors of a peer's death, ranks the launcher stopped, a rank
// that left its peers waiting (with its footer, but they had not finished), and a launch the
// launcher ended itself.
TEST(TeardownCheckerTest, QuietOnExitsThatAreNoDeathAfterTraining) {
  CannedRun run = AbortAfterTheFooter();
  run.launch.ranks[1].failed_after_peer = true;
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
  run.launch.ranks[1].failed_after_peer = false;
  run.launch.ranks[1].killed_by_launcher = true;
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
  run.launch.ranks[1].killed_by_launcher = false;
  run.launch.ranks[1].left_peers_waiting = true;
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
  run.launch.ranks[1].left_peers_waiting = false;
  for (LaunchEnding ending : {LaunchEnding::kHang, LaunchEnding::kTimeout, LaunchEnding::kInterrupted,
                              LaunchEnding::kRankError, LaunchEnding::kNodeLost}) {
    run.launch.ending = ending;
    EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty()) << ToString(ending);
  }
  // An error footer is no clean end: the rank stopped on a harness error.
  run.launch.ending = LaunchEnding::kCrash;
  run.traces[1].footer = TraceFooter{5, "communication: Connection reset by peer"};
  EXPECT_TRUE(TeardownChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
