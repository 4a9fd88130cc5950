// The judge stage alone, on canned traces written by the project's TraceWriter: what each kind of
// evidence demands before a verdict, and the verdicts of launches that ended before their checks.
#include "harness/runner/judge.h"

#include <gtest/gtest.h>

#include <fstream>

#include "harness/core/testing/temp_dir.h"
#include "harness/launcher/trace_folder.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// Step `s` of a one-tensor model whose weights have the digest `digest`.
StepRecord OneTensorStep(int64_t s, Digest128 digest) {
  StepRecord step;
  step.step = s;
  TensorRecord w;
  w.name = "w0";
  w.numel = 4;
  w.dtype = "float32";
  w.digest = digest;
  step.tensors.push_back(w);
  return step;
}

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
      ASSERT_TRUE((*writer)->WriteStep(OneTensorStep(s, Digest128{static_cast<uint64_t>(s), 7})).ok());
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

// Traces of no step: each rank's header and one group it made at start-up (`groups`, one per rank,
// as the probe describes it), and a clean-exit footer if `footer`.
void WriteStartUpOnly(const fs::path& dir, const std::vector<std::string>& groups, bool footer) {
  fs::create_directories(dir);
  for (size_t r = 0; r < groups.size(); ++r) {
    TraceHeader header;
    header.rank = static_cast<int>(r);
    header.world_size = static_cast<int>(groups.size());
    header.backend = "gloo";
    auto writer = TraceWriter::Open(dir / TraceFileName(static_cast<int>(r)), header);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    DiscoveryRecord made;
    made.call = 1;
    made.phase = "startup";
    made.name = "torch.new_group";
    made.comm = groups[r];
    ASSERT_TRUE((*writer)->WriteDiscovery(made).ok());
    if (footer) {
      ASSERT_TRUE((*writer)->WriteFooter(TraceFooter{0, "ok"}).ok());
    }
  }
}

// A start-up timeout leaves nothing of the steps to compare, but what every rank records before
// its first step is judged beside it (checkers that say judges_start_up), where the scenario's
// checks list them: here the groups that ranks which asked for different ones waited in.
TEST(JudgeTest, AStartupTimeoutIsJudgedByTheCheckersOfWhatPrecedesTheFirstStep) {
  testing::TempDir dir("lockstep_judge_");
  WriteStartUpOnly(dir.path(), {"group[0]", "group[1]"}, /*footer=*/false);
  Evidence e = Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps);
  e.scenario.checks = {"replica_weights", "group_agreement", "config_agreement"};
  LaunchReport stopped;
  stopped.ending = LaunchEnding::kStartupTimeout;
  stopped.stalled_ranks = {1};
  stopped.message = "start-up timeout: rank 1 had not recorded step 0";
  e.launch = stopped;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail);
  std::vector<std::string> found, judged;
  for (const Finding& f : r.findings) found.push_back(f.checker);
  for (const CheckerVerdict& v : r.checkers) judged.push_back(v.checker);
  EXPECT_EQ(found, (std::vector<std::string>{"startup", "group_agreement"}));
  EXPECT_EQ(judged, (std::vector<std::string>{"startup", "group_agreement", "config_agreement"}));
  // A scenario that does not list it is not judged by it.
  e.scenario.checks = {"replica_weights"};
  const ScenarioResult only = Judge(e, {});
  ASSERT_EQ(only.findings.size(), 1u);
  EXPECT_EQ(only.findings[0].checker, "startup");
}

// A program that never steps an optimizer (a bug report's reproduction script) has no step to
// compare: an error, unless what precedes a first step is a finding, which is then the verdict.
TEST(JudgeTest, AProgramWithoutStepsIsJudgedOnWhatPrecedesThem) {
  testing::TempDir dir("lockstep_judge_");
  Evidence e = Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps);
  e.scenario.checks = {"replica_weights", "group_agreement"};
  LaunchReport clean;
  clean.ending = LaunchEnding::kClean;
  e.launch = clean;
  WriteStartUpOnly(dir.path(), {"group[0,1]", "group[0,1]"}, /*footer=*/true);
  const ScenarioResult alike = Judge(e, {});
  EXPECT_EQ(alike.outcome, Outcome::kError);
  EXPECT_NE(alike.reason.find("never stepped an optimizer, so no step was checked"), std::string::npos)
      << alike.reason;
  WriteStartUpOnly(dir.path(), {"group[0]", "group[0,1]"}, /*footer=*/true);
  const ScenarioResult apart = Judge(e, {});
  EXPECT_EQ(apart.outcome, Outcome::kFail) << apart.reason;
  ASSERT_EQ(apart.findings.size(), 1u);
  EXPECT_EQ(apart.findings[0].checker, "group_agreement");
  EXPECT_NE(apart.reason.find("never stepped an optimizer"), std::string::npos) << apart.reason;
  EXPECT_NE(apart.reason.find("only what every rank records before its first step was judged"), std::string::npos)
      << apart.reason;
}

// A spawning's folder as the probe leaves it (probe/lockstep/_spawn.py): spawning.json and the
// traces of its world, `odd` (if >= 0) holding other weights from step `from` on.
void WriteSpawning(const fs::path& traces, int k, const std::string& function, int ranks, int64_t steps, int odd = -1,
                   int64_t from = 0) {
  const fs::path dir = traces / ("spawn-" + std::to_string(k));
  fs::create_directories(dir);
  std::ofstream(dir / "spawning.json") << "{\"spawning\": " << k << ", \"function\": \"" << function
                                       << "\", \"nprocs\": " << ranks << ", \"start_method\": \"spawn\"}\n";
  for (int r = 0; r < ranks; ++r) {
    TraceHeader header;
    header.rank = r;
    header.world_size = ranks;
    header.backend = "gloo";
    auto writer = TraceWriter::Open(dir / TraceFileName(r), header);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (int64_t s = 1; s <= steps; ++s) {
      const Digest128 digest{static_cast<uint64_t>(s), r == odd && s >= from ? 8u : 7u};
      ASSERT_TRUE((*writer)->WriteStep(OneTensorStep(s, digest)).ok());
    }
    TraceFooter footer;
    footer.steps_completed = steps;
    footer.status = "ok";
    ASSERT_TRUE((*writer)->WriteFooter(footer).ok());
  }
}

// Rank 1 of a 2-rank world in `dir` as a crash leaves it: step 1 recorded, no footer.
void RankDiedAfterStep1(const fs::path& dir) {
  TraceHeader header;
  header.rank = 1;
  header.world_size = 2;
  header.backend = "gloo";
  auto writer = TraceWriter::Open(dir / TraceFileName(1), header);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->WriteStep(OneTensorStep(1, Digest128{1, 7})).ok());
}

// `lockstep exec --ranks 1` of a program that spawns its own worlds: the launched process wrote no
// trace, each spawning is judged as a world of the size its ranks declared, and a finding names
// its spawning; nothing of one spawning is mixed with another's.
TEST(JudgeTest, EachSpawningIsJudgedAsItsOwnWorldAndNamedInItsFindings) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  WriteSpawning(dir.path(), 2, "demo_checkpoint", 3, 3, /*odd=*/2, /*from=*/2);
  WriteSpawning(dir.path(), 10, "demo_model_parallel", 1, 1);
  const std::vector<Spawning> found = SpawningsIn(dir.path());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[1].index, 2);
  EXPECT_EQ(found[1].world, 3) << "rank 0's header";
  EXPECT_EQ(found[2].index, 10) << "in the order they were made, not by name";
  EXPECT_EQ(found[1].Label(), "spawning 2 (demo_checkpoint)");

  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  LaunchReport launch;
  launch.ending = LaunchEnding::kClean;
  e.launch = launch;
  ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  EXPECT_EQ(r.steps, 2 + 3 + 1) << "every spawning's steps";
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.message.rfind("spawning 2 (demo_checkpoint): ", 0), 0u) << f.message;
    EXPECT_EQ(f.details.at("spawning"), "2");
    EXPECT_EQ(f.details.at("spawned_function"), "demo_checkpoint");
    EXPECT_EQ(f.step, 2);
    EXPECT_EQ(f.ranks, std::vector<int>{2});
  }
  // The same spawnings, all clean: a pass (the launched process's missing trace is no fault).
  testing::TempDir clean("lockstep_judge_");
  WriteSpawning(clean.path(), 1, "demo_basic", 2, 2);
  WriteSpawning(clean.path(), 2, "demo_checkpoint", 3, 3);
  e.trace_dir = clean.path();
  r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  EXPECT_EQ(r.steps, 5);
}

// A spawned rank that raised makes mp.spawn raise in the launched process, which exits 1: the crash
// is judged in the last spawning, on the rank without its clean-exit footer, not on the launcher.
TEST(JudgeTest, ACrashOfTheLauncherIsPlacedInTheLastSpawningOnTheRankThatDidNotEnd) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  WriteSpawning(dir.path(), 2, "demo_checkpoint", 2, 2);
  RankDiedAfterStep1(dir.path() / "spawn-2");
  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  e.scenario.checks = {"replica_weights", "crash"};
  LaunchReport crash;
  crash.ending = LaunchEnding::kCrash;
  RankExit launcher;
  launcher.rank = 0;
  launcher.exit_code = 1;
  crash.ranks.push_back(launcher);
  e.launch = crash;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  ASSERT_EQ(r.findings.size(), 1u) << r.findings.back().message;
  EXPECT_EQ(r.findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(r.findings[0].message.rfind("spawning 2 (demo_checkpoint): crash: ", 0), 0u) << r.findings[0].message;
}

// A world started with multiprocessing.Process raises nothing in the launched process when one of
// its ranks dies: the program goes on (here to a second world) and exits 0. The world whose rank
// ended without its clean-exit footer crashed, whatever the launch's ending says.
TEST(JudgeTest, AWorldWhoseRankDiedIsACrashEvenWhenTheLaunchedProcessWentOn) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "init_process", 2, 2);
  WriteSpawning(dir.path(), 2, "init_process", 2, 2);
  RankDiedAfterStep1(dir.path() / "spawn-1");
  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  e.scenario.checks = {"replica_weights", "crash"};
  LaunchReport clean;
  clean.ending = LaunchEnding::kClean;
  e.launch = clean;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  ASSERT_EQ(r.findings.size(), 1u) << r.findings.back().message;
  EXPECT_EQ(r.findings[0].checker, "crash");
  EXPECT_EQ(r.findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(r.findings[0].message.rfind("spawning 1 (init_process): crash: ", 0), 0u) << r.findings[0].message;
  EXPECT_NE(r.findings[0].message.find("the launched process went on"), std::string::npos) << r.findings[0].message;
}

// The launched process records nothing of its own: after its last spawning's ranks finished, a
// phase of its own that outlasts --startup-timeout (the watch's bound there) is an error saying
// so, no finding about the spawned ranks.
TEST(JudgeTest, AStartupTimeoutOfTheLaunchedProcessAfterItsSpawningsIsAnErrorNotAFinding) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  e.scenario.startup_timeout_s = 30;
  LaunchReport stopped;
  stopped.ending = LaunchEnding::kStartupTimeout;
  stopped.stalled_ranks = {0};
  e.launch = stopped;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_NE(r.reason.find("the last spawning 1 (demo_basic), whose ranks all finished) and then neither started "
                          "another nor ended within --startup-timeout (30 s)"),
            std::string::npos)
      << r.reason;
}

// Spawning 2's world as a hang leaves it: rank 0 inside world seq 1 of step 2, rank 1 never began
// it; neither wrote its footer.
void WriteHungSpawning(const fs::path& traces) {
  const fs::path dir = traces / "spawn-2";
  fs::create_directories(dir);
  std::ofstream(dir / "spawning.json") << R"({"spawning": 2, "function": "demo_checkpoint", "nprocs": 2})" << "\n";
  for (int r = 0; r < 2; ++r) {
    TraceHeader header;
    header.rank = r;
    header.world_size = 2;
    header.backend = "gloo";
    auto writer = TraceWriter::Open(dir / TraceFileName(r), header);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (uint64_t seq = 0; seq < (r == 0 ? 2u : 1u); ++seq) {
      CollectiveRecord c;
      c.group = "world";
      c.seq = seq;
      c.op = "all_reduce";
      c.dtype = "float32";
      c.count = 4;
      c.step = static_cast<int64_t>(seq) + 1;
      c.start_s = static_cast<double>(seq);
      ASSERT_TRUE((*writer)->WriteCollectiveBegin(c).ok());
      if (seq == 0) {
        ASSERT_TRUE((*writer)->WriteCollectiveEnd("world", 0, 0.5).ok());
      }
    }
    ASSERT_TRUE((*writer)->WriteStep(OneTensorStep(1, Digest128{1, 7})).ok());
  }
}

// The watch found a hang in spawning 2's world (LaunchReport::spawning): it is judged there, on
// that world's ranks, and named by its spawning; spawning 1 is judged as before, clean.
TEST(JudgeTest, AHangTheWatchFoundInASpawnedWorldIsJudgedInThatWorld) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  WriteHungSpawning(dir.path());
  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  e.scenario.checks = {"replica_weights", "crash", "hang"};
  LaunchReport hang;
  hang.ending = LaunchEnding::kHang;
  hang.spawning = 2;
  hang.stalled_ranks = {1};
  for (int r = 0; r < 2; ++r) {
    RankExit x;
    x.rank = r;
    x.killed_by_launcher = true;
    hang.ranks.push_back(x);
  }
  e.launch = hang;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  ASSERT_EQ(r.findings.size(), 1u) << r.findings.back().message;
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.checker, "hang");
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.message.rfind("spawning 2 (demo_checkpoint): hang: rank 0 waits in world seq 1", 0), 0u) << f.message;
  EXPECT_NE(f.message.find("rank 1 never reached it"), std::string::npos) << f.message;
  EXPECT_EQ(f.details.at("spawning"), "2");

  // The same hang left in the launched process's hands (spawning 0): what the launch saw of its
  // one process, not the spawned world's ranks.
  e.launch->spawning = 0;
  const ScenarioResult launched = Judge(e, {});
  for (const Finding& g : launched.findings) EXPECT_NE(g.message.rfind("spawning 2", 0), 0u) << g.message;
}

// A spawned rank that never started: the start-up timeout of its spawning, naming that rank there
// (a `startup` finding, as in a launched world), not the launched process.
TEST(JudgeTest, AStartupTimeoutTheWatchFoundInASpawnedWorldNamesItsRank) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  Evidence e = Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps);
  LaunchReport stopped;
  stopped.ending = LaunchEnding::kStartupTimeout;
  stopped.spawning = 1;
  stopped.stalled_ranks = {1};
  stopped.message = "start-up timeout: rank 1 had not recorded step 0";
  e.launch = stopped;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].checker, "startup");
  EXPECT_EQ(r.findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(r.findings[0].message.rfind("spawning 1 (demo_basic): ", 0), 0u) << r.findings[0].message;
  EXPECT_NE(r.reason.find("spawning 1 (demo_basic): start-up timeout: rank 1"), std::string::npos) << r.reason;
}

// A spawning whose ranks never stepped cannot be checked: the run is an error naming that spawning,
// not a pass on the strength of the others.
TEST(JudgeTest, ASpawningThatCouldNotBeCheckedMakesTheRunAnErrorNamingIt) {
  testing::TempDir dir("lockstep_judge_");
  WriteSpawning(dir.path(), 1, "demo_basic", 2, 2);
  WriteSpawning(dir.path(), 2, "demo_checkpoint", 2, 0);
  const ScenarioResult r = Judge(Recorded(dir.path(), 1, TraceDemand::kEveryRankSteps), {});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("spawning 2 (demo_checkpoint): no step recorded by rank 0, rank 1"), std::string::npos)
      << r.reason;
}

// Under several launched ranks the probe refuses the program's spawn and every copy exits: the
// verdict is that refusal (nothing checked), not the crash the exits look like.
TEST(JudgeTest, ARefusedSpawnIsAnErrorSayingWhyNotACrash) {
  testing::TempDir dir("lockstep_judge_");
  std::ofstream(dir.path() / "spawn-refused.json")
      << R"({"launched_ranks": 2, "rank": 0, "function": "demo_basic", "nprocs": 2, "message": "the program starts )"
      << R"(its own ranks with torch.multiprocessing.spawn; run it with --ranks 1"})" << "\n";
  Evidence e = Recorded(dir.path(), 2, TraceDemand::kEveryRankSteps);
  LaunchReport crash;
  crash.ending = LaunchEnding::kCrash;
  for (int rank : {0, 1}) {
    RankExit exit;
    exit.rank = rank;
    exit.exit_code = 3;
    crash.ranks.push_back(exit);
  }
  e.launch = crash;
  const ScenarioResult r = Judge(e, {});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.reason, "the program starts its own ranks with torch.multiprocessing.spawn; run it with --ranks 1");
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
