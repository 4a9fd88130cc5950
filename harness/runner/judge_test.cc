// The judge stage alone, on canned traces written by the project's TraceWriter: what each kind of
// evidence demands before a verdict, and the verdicts of launches that ended before their checks.
#include "harness/runner/judge.h"

#include <gtest/gtest.h>

#include <fstream>

#include "harness/core/testing/temp_dir.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// Rank traces with `steps` steps each (0: a header only), the same w0 on every rank.
void WriteTraces(const fs::path& dir, int ranks, int64_t steps) {
  fs::create_directories(dir);
  for (int r = 0; r < ranks; ++r) {
    TraceHeader header;
    header.rank = r;
    header.world_size = ranks;
    header.backend = "gloo";
    auto writer = TraceWriter::Open(dir / TraceFileName(r), header);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (int64_t s = 1; s <= steps; ++s) {
      StepRecord step;
      step.step = s;
      TensorRecord w;
      w.name = "w0";
      w.numel = 4;
      w.dtype = "float32";
      w.digest = Digest128{static_cast<uint64_t>(s), 7};
      step.tensors.push_back(w);
      ASSERT_TRUE((*writer)->WriteStep(step).ok());
    }
  }
}

Evidence Recorded(const fs::path& dir, int ranks, TraceDemand demand) {
  Evidence e;
  e.scenario.name = "s";
  e.scenario.ranks = ranks;
  e.scenario.checks = {"replica_weights"};
  e.trace_dir = dir;
  e.have_scenario_file = false;
  e.demand = demand;
  return e;
}

TEST(JudgeTest, RecordedTracesWithStepsAreJudgedAndTheirBackendAndStepsFilled) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 2, 3);
  const ScenarioResult r = Judge(Recorded(dir.path(), 2, TraceDemand::kAnyStep), {});
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.steps, 3);
}

TEST(JudgeTest, WhatEachDemandRefusesToJudge) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 2, 0);
  // No step anywhere: nothing was checked, for recorded traces and the user's program alike.
  ScenarioResult any = Judge(Recorded(dir.path(), 2, TraceDemand::kAnyStep), {});
  EXPECT_EQ(any.outcome, Outcome::kError);
  EXPECT_NE(any.reason.find("no rank recorded a step"), std::string::npos) << any.reason;
  ScenarioResult every = Judge(Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps), {});
  EXPECT_EQ(every.outcome, Outcome::kError);
  EXPECT_NE(every.reason.find("no step recorded by rank 0, rank 1"), std::string::npos) << every.reason;
  // lockstep-rank's traces demand nothing: the checkers judge them.
  ScenarioResult none = Judge(Recorded(dir.path(), 2, TraceDemand::kNone), {});
  EXPECT_NE(none.outcome, Outcome::kError) << none.reason;
}

// A user's program whose ranks hung inside their first step recorded no step, and the hang is
// still the verdict: the launch says what happened, the checkers judge it (hang is among them).
TEST(JudgeTest, AHangBeforeAnyRecordedStepIsAVerdictNotAnError) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 2, 0);
  Evidence e = Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps);
  e.have_scenario_file = true;
  LaunchReport launch;
  launch.ending = LaunchEnding::kHang;
  launch.stalled_ranks = {0, 1};
  e.launch = launch;
  const ScenarioResult hung = Judge(e, {});
  EXPECT_EQ(hung.outcome, Outcome::kFail) << hung.reason;
  // The same traces from a run that ended cleanly: nothing was checked.
  e.launch->ending = LaunchEnding::kClean;
  e.launch->stalled_ranks.clear();
  const ScenarioResult clean = Judge(e, {});
  EXPECT_EQ(clean.outcome, Outcome::kError);
  EXPECT_NE(clean.reason.find("never stepped an optimizer"), std::string::npos) << clean.reason;
}

TEST(JudgeTest, ATraceOfARankPastTheWorldIsAnErrorNamingIt) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 3, 2);
  const ScenarioResult r = Judge(Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps), {});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("the program started more ranks than --ranks 2"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("rank-2.trace"), std::string::npos) << r.reason;
}

TEST(JudgeTest, AnEmptyTraceFileIsUnreadable) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 2, 2);
  std::ofstream(dir.path() / TraceFileName(1), std::ios::trunc);
  const ScenarioResult r = Judge(Recorded(dir.path(), 2, TraceDemand::kAnyStep), {});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("unreadable trace (no header)"), std::string::npos) << r.reason;
}

TEST(JudgeTest, ALaunchThatEndedBeforeItsChecksIsJudgedByItsEnding) {
  testing::TempDir dir("lockstep_judge_");
  WriteTraces(dir.path(), 2, 2);
  Evidence e = Recorded(dir.path(), 2, TraceDemand::kNone);
  e.have_scenario_file = true;
  e.scenario.timeout_s = 5;
  LaunchReport launch;
  launch.ending = LaunchEnding::kTimeout;
  launch.message = "killed";
  e.launch = launch;
  ScenarioResult timeout = Judge(e, {});
  EXPECT_EQ(timeout.outcome, Outcome::kTimeout);
  EXPECT_NE(timeout.reason.find("ran past timeout_s"), std::string::npos);
  e.launch->ending = LaunchEnding::kRankError;
  e.launch->message = "rank 1: scenario: bad";
  ScenarioResult rank_error = Judge(e, {});
  EXPECT_EQ(rank_error.outcome, Outcome::kError);
  EXPECT_EQ(rank_error.reason, "rank 1: scenario: bad");
  for (LaunchEnding ending : {LaunchEnding::kLaunchFailed, LaunchEnding::kInterrupted, LaunchEnding::kRankError,
                              LaunchEnding::kStartupTimeout, LaunchEnding::kTimeout}) {
    EXPECT_TRUE(EndsBeforeTheChecks(ending)) << ToString(ending);
  }
  for (LaunchEnding ending : {LaunchEnding::kClean, LaunchEnding::kCrash, LaunchEnding::kHang}) {
    EXPECT_FALSE(EndsBeforeTheChecks(ending)) << ToString(ending);
  }
}

TEST(JudgeTest, ACrashIsJudgedEvenWhenTheChecksLeaveItsCheckerOut) {
  LaunchReport crash;
  crash.ending = LaunchEnding::kCrash;
  EXPECT_EQ(ChecksJudging({"replica_weights"}, crash), (std::vector<std::string>{"replica_weights", "crash"}));
  EXPECT_EQ(ChecksJudging({"replica_weights"}, std::nullopt), (std::vector<std::string>{"replica_weights"}));
}

TEST(JudgeTest, WithoutAScenarioFileTheCheckersThatNeedOneAreSkipped) {
  EXPECT_TRUE(SkippedForWantOfInputs({"golden", "replica_weights"}, true, true).empty());
  const auto skipped = SkippedForWantOfInputs({"golden", "replica_weights", "crash"}, false, false);
  EXPECT_EQ(skipped.count("golden"), 1u);
  EXPECT_EQ(skipped.count("crash"), 1u) << "no launch to judge";
  EXPECT_EQ(skipped.count("replica_weights"), 0u);
}

}  // namespace
}  // namespace lockstep
