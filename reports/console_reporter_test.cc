#include "reports/console_reporter.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reports/golden_file_testutil.h"

namespace lockstep {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// Replays a finished run through the listener, as the launcher would while it runs.
void Replay(ConsoleReporter& console, const RunResult& result) {
  console.OnRunStart(result.context, static_cast<int>(result.scenarios.size()));
  for (const ScenarioResult& s : result.scenarios) {
    console.OnScenarioStart(s.id, s.ranks, s.steps, 0);
    for (int64_t step = 1; step <= s.steps; ++step) console.OnProgress(s.id, step, s.steps);
    console.OnScenarioEnd(s);
  }
  console.OnRunEnd(result);
}

TEST(ConsoleReporterTest, PlainLinesForLogs) {
  std::ostringstream out;
  ConsoleReporter console(out, /*interactive=*/false, [] { return 0.0; });
  Replay(console, testing::LoadFixture("mixed"));
  const std::string text = out.str();
  EXPECT_THAT(text, Not(HasSubstr("\r")));
  EXPECT_THAT(text, Not(HasSubstr("\033")));
  EXPECT_THAT(text, HasSubstr("[ RUN  ] ddp_grad_not_reduced (4 ranks, 5 steps)\n"));
  EXPECT_THAT(text, HasSubstr("[ PASS ] ddp_mlp_basic 3.2s\n"));
  EXPECT_THAT(text, HasSubstr("[ FAIL ] ddp_grad_not_reduced: synced_grads step 3 tensor fc1.weight (grad) ranks [1] "
                              "(+1 more)\n"));
  EXPECT_THAT(text, HasSubstr("[ XFAIL] inject_skip_grad_allreduce 4.8s (expected: replica_weights step 3 tensor "
                              "fc1.weight ranks [1])\n"));
  EXPECT_THAT(text, HasSubstr("[ SKIP ] nccl_basic 0.0s: nccl backend needs a CUDA device; none found\n"));
  EXPECT_THAT(text, EndsWith("1 passed, 4 failed, 1 error, 1 xfail, 1 skipped\n"));
  testing::ExpectMatchesGolden(text, "mixed.console.txt");
}

TEST(ConsoleReporterTest, ProgressBarOnATerminal) {
  std::ostringstream out;
  double now = 100.0;
  ConsoleReporter console(out, /*interactive=*/true, [&now] { return now; });
  console.OnRunStart(RunContext{}, 1);
  console.OnScenarioStart("ddp", 2, 10, 0);
  now += 5.0;
  console.OnProgress("ddp", 5, 10);
  const std::string bar = out.str();
  EXPECT_THAT(bar, EndsWith("\r\033[K[############............] ddp step 5/10 ETA 00:05"));

  now += 0.01;  // too soon to redraw
  console.OnProgress("ddp", 6, 10);
  EXPECT_EQ(out.str(), bar);

  now += 5.0;
  console.OnProgress("ddp", 10, 10);
  EXPECT_THAT(out.str(), EndsWith("ddp step 10/10 ETA 00:00"));

  ScenarioResult done;
  done.id = "ddp";
  done.duration_s = 10.0;
  console.OnScenarioEnd(done);
  // The bar is erased before the end line, so the log reads like the plain one.
  EXPECT_THAT(out.str(), EndsWith("ETA 00:00\r\033[K[ PASS ] ddp 10.0s\n"));
}

TEST(ConsoleReporterTest, SummaryCountsEveryFailureKind) {
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnRunEnd(testing::LoadFixture("mixed"));
  EXPECT_EQ(out.str(),
            "[==========] 8 scenarios ran in 49.2s\n"
            "[  FAILED  ] ddp_grad_not_reduced (fail)\n"
            "[  FAILED  ] inject_bitflip_missed (xpass)\n"
            "[  FAILED  ] ddp_lr_blowup (fail)\n"
            "[  FAILED  ] ddp_launch_error (error)\n"
            "[  FAILED  ] ddp_hang (timeout)\n"
            "1 passed, 4 failed, 1 error, 1 xfail, 1 skipped\n");
}

// As a Reporter (lockstep report): the same closing block, on the stream handed in, and nothing
// on the live stream.
TEST(ConsoleReporterTest, RendersTheClosingBlockAsAReporter) {
  std::ostringstream live, live_end, rendered;
  const RunResult run = testing::LoadFixture("mixed");
  ConsoleReporter console(live, /*interactive=*/true, [] { return 0.0; });
  const Reporter& reporter = console;
  EXPECT_EQ(reporter.name(), "console");
  ASSERT_TRUE(reporter.Render(run, rendered).ok());
  EXPECT_EQ(live.str(), "");
  ConsoleReporter(live_end, false, [] { return 0.0; }).OnRunEnd(run);
  EXPECT_EQ(rendered.str(), live_end.str());
  EXPECT_THAT(rendered.str(), EndsWith("1 passed, 4 failed, 1 error, 1 xfail, 1 skipped\n"));
}

TEST(ConsoleReporterTest, AStreamThatFailsIsAnError) {
  std::ostringstream broken;
  broken.setstate(std::ios::badbit);
  ConsoleReporter console(broken, false, [] { return 0.0; });
  EXPECT_FALSE(console.Render(testing::LoadFixture("mixed"), broken).ok());
}

// A run that only broke is not "0 passed, 1 failed": the system under test did not fail.
TEST(ConsoleReporterTest, AHarnessErrorIsCountedAsAnErrorNotAFailure) {
  RunResult run;
  ScenarioResult s;
  s.id = "ddp";
  s.outcome = Outcome::kError;
  s.reason = "the ranks could not be started";
  run.scenarios.push_back(s);
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnRunEnd(run);
  EXPECT_THAT(out.str(), EndsWith("\n0 passed, 0 failed, 1 error\n"));
}

// The reference run did not complete: the line says why, not only "reference".
TEST(ConsoleReporterTest, AnErrorFindingSaysWhatBroke) {
  ScenarioResult s;
  s.id = "ddp";
  s.outcome = Outcome::kError;
  Finding f;
  f.checker = "reference";
  f.outcome = FindingOutcome::kError;
  f.message = "the reference run did not complete: crash rank 0: killed by signal 9\nmore";
  s.findings.push_back(f);
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnScenarioEnd(s);
  EXPECT_EQ(out.str(), "[ ERROR] ddp: reference: the reference run did not complete: crash rank 0: killed by signal 9\n");
}

// A program's own steps (exec): the RUN line gives no step count before any is recorded, and
// the closing line says how many were recorded and what each checker compared.
TEST(ConsoleReporterTest, SaysWhatEachCheckerComparedAndTheStepsRecorded) {
  ScenarioResult s;
  s.id = "train";
  s.ranks = 2;
  s.steps = 6;
  s.duration_s = 1.0;
  s.checkers.push_back({"replica_weights", Outcome::kPass, 0.0, "", CheckerCoverage{"param", 4, 6, 1, 24}});
  s.checkers.push_back({"crash", Outcome::kPass, 0.0, "", std::nullopt});
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnScenarioStart("train", 2, 0, 0);
  console.OnScenarioEnd(s);
  EXPECT_EQ(out.str(),
            "[ RUN  ] train (2 ranks)\n"
            "[ PASS ] train 1.0s\n"
            "  6 steps recorded; compared: replica_weights: 4 param tensors in 6 steps, 1 group\n");
}

// FSDP2 on 2 ranks shards every parameter: the pass says that no parameter was compared.
TEST(ConsoleReporterTest, APassThatComparedNoParameterSaysSo) {
  ScenarioResult s;
  s.id = "fsdp2";
  s.steps = 5;
  s.duration_s = 1.0;
  s.checkers.push_back({"replica_weights", Outcome::kPass, 0.0, "", CheckerCoverage{"param", 0, 0, 0, 0}});
  s.checkers.push_back({"optimizer_state", Outcome::kPass, 0.0, "", CheckerCoverage{"optimizer_state", 2, 5, 1, 10}});
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnScenarioEnd(s);
  EXPECT_THAT(out.str(), HasSubstr("[ PASS ] fsdp2 1.0s: no parameter had a replica to compare (replica_weights "
                                   "compared nothing)\n"));
  EXPECT_THAT(out.str(), HasSubstr("replica_weights: no param tensor held by two ranks that must agree; "
                                   "optimizer_state: 2 optimizer_state tensors in 5 steps, 1 group"));
}

// Several hosts: the RUN line says on how many when known, the end line which rank ran where.
TEST(ConsoleReporterTest, RanksOnSeveralHostsAreSaidWhere) {
  ScenarioResult s;
  s.id = "ddp";
  s.ranks = 4;
  s.steps = 5;
  s.outcome = Outcome::kPass;
  s.rank_hosts = {{0, "node0"}, {1, "node0"}, {2, "node1"}, {3, "node1"}};
  CheckerVerdict v;
  v.checker = "replica_weights";
  v.judged = CheckerCoverage{"param", 2, 5, 1, 10};
  s.checkers.push_back(v);
  std::ostringstream out;
  ConsoleReporter console(out, false, [] { return 0.0; });
  console.OnScenarioStart("ddp", 4, 5, 2);
  console.OnScenarioEnd(s);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("[ RUN  ] ddp (4 ranks on 2 hosts, 5 steps)"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("5 steps recorded on 2 hosts (node0: ranks 0,1; node1: ranks 2,3); compared: "));
}

}  // namespace
}  // namespace lockstep
