// ScenarioRunner with a fake rank program and a fake launcher: every launch is recorded and
// answered with traces written by the project's TraceWriter and a canned LaunchReport, so the
// runner's decisions (companion runs, skips, verdicts, harness errors) are pinned without a
// process.
#include "harness/runner/scenario_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>

#include "checkers/in_band_comparison.h"
#include "harness/scenario/scenario_loader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

Digest128 DigestOf(const std::string& what) {
  const uint64_t h = std::hash<std::string>{}(what);
  return Digest128{h, h * 0x9e3779b97f4a7c15ULL + 1};
}

class FakeProgram : public RankProgram {
 public:
  bool Supports(RankRun run) const override { return run != RankRun::kReference || reference; }
  bool TakesScenarioFile() const override { return !users_program; }
  bool MayRunUnobserved() const override { return users_program; }
  std::optional<Refusal> Refuses(const Scenario&, LauncherKind) const override { return refusal; }
  RunLabel Label(const Scenario&) const override { return {"fake", users_program ? "" : "gloo"}; }
  RankInvocation Invocation(const Scenario& scenario, RankRun run, const LaunchPaths& paths) const override {
    scenario_files.push_back(paths.scenario_file);
    return {{"fake-program", scenario.name, ToString(run)}, {{"FAKE_RUN", ToString(run)}}};
  }
  bool reference = true;
  bool users_program = false;  // as `lockstep exec`'s: no scenario file, may run unobserved
  std::optional<Refusal> refusal;
  mutable std::vector<fs::path> scenario_files;  // handed to each Invocation
};

// What one launch writes and how it ends.
struct FakeOutcome {
  int64_t steps = 3;
  bool write_traces = true;
  bool write_steps = true;
  int diverge_rank = -1;       // records another w0 from diverge_step on
  int64_t diverge_step = 0;
  std::vector<std::string> rank0_log;  // `log` records rank 0 writes after its steps
  std::map<int, std::map<std::string, std::string>> environment;  // the header's, by rank
  LaunchEnding ending = LaunchEnding::kClean;
};

class FakeLauncher : public RankLauncher {
 public:
  Result<LaunchReport> Launch(const LaunchSpec& spec, const ProgressCallback&) override {
    specs.push_back(spec);
    const std::string run = spec.env.count("FAKE_RUN") ? spec.env.at("FAKE_RUN") : "?";
    const FakeOutcome outcome = outcomes.count(run) ? outcomes.at(run) : FakeOutcome{};
    LaunchReport report;
    report.ending = outcome.ending;
    for (int r = 0; r < spec.ranks; ++r) {
      RankExit e;
      e.rank = r;
      e.exit_code = 0;
      report.ranks.push_back(e);
      if (!outcome.write_traces) continue;
      TraceHeader header;
      header.rank = r;
      header.world_size = spec.ranks;
      if (outcome.environment.count(r)) header.environment = outcome.environment.at(r);
      auto writer = TraceWriter::Open(spec.trace_dir / TraceFileName(r), header);
      if (!writer.ok()) return writer.status();
      for (int64_t s = 0; outcome.write_steps && s <= outcome.steps; ++s) {
        StepRecord step;
        step.step = s;
        TensorRecord w;
        w.name = "w0";
        w.numel = 4;
        w.dtype = "float32";
        w.norm = 1.0;
        const bool off = r == outcome.diverge_rank && s >= outcome.diverge_step;
        w.digest = DigestOf("w0/" + std::to_string(s) + (off ? "/off" : ""));
        step.tensors.push_back(w);
        LOCKSTEP_RETURN_IF_ERROR((*writer)->WriteStep(step));
      }
      for (const std::string& line : r == 0 ? outcome.rank0_log : std::vector<std::string>{}) {
        LOCKSTEP_RETURN_IF_ERROR((*writer)->WriteLog(line));
      }
      if (outcome.ending == LaunchEnding::kClean) LOCKSTEP_RETURN_IF_ERROR((*writer)->WriteFooter({outcome.steps, "ok"}));
    }
    return report;
  }
  std::map<std::string, FakeOutcome> outcomes;  // by RankRun name
  std::vector<LaunchSpec> specs;
};

class ScenarioRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (fs::temp_directory_path() / "scenario_runner_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    out_ = dir;
    scenario_.name = "s";
    scenario_.location.file = "s.yaml";
    scenario_.ranks = 2;
    scenario_.steps = 3;
    scenario_.backend = Backend::kGloo;
  }
  void TearDown() override { fs::remove_all(out_); }

  ScenarioResult Run(RunOptions options = {}) {
    options.out_dir = out_;
    options.launcher = LauncherKind::kLocal;
    ScenarioRunner runner(options, nullptr, program_, launcher_);
    return runner.RunOne(scenario_);
  }
  const CheckerVerdict* Verdict(const ScenarioResult& r, const std::string& checker) {
    for (const auto& v : r.checkers) {
      if (v.checker == checker) return &v;
    }
    return nullptr;
  }

  fs::path out_;
  Scenario scenario_;
  FakeProgram program_;
  FakeLauncher launcher_;
};

TEST_F(ScenarioRunnerTest, LaunchesTheProgramsInvocationAndPassesACleanRun) {
  scenario_.checks = {"replica_weights", "finite", "determinism"};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  ASSERT_EQ(launcher_.specs.size(), 2u);  // the run and its repeat for determinism
  EXPECT_EQ(launcher_.specs[0].rank_command, (std::vector<std::string>{"fake-program", "s", "main"}));
  EXPECT_EQ(launcher_.specs[0].ranks, 2);
  EXPECT_EQ(launcher_.specs[0].trace_dir, out_ / "s" / "traces");
  EXPECT_EQ(launcher_.specs[1].rank_command.back(), "repeat");
  EXPECT_EQ(launcher_.specs[1].trace_dir, out_ / "s" / "repeat" / "traces");
  ASSERT_EQ(r.checkers.size(), 3u);
  for (const auto& v : r.checkers) EXPECT_EQ(v.outcome, Outcome::kPass) << v.checker;
}

TEST_F(ScenarioRunnerTest, ReferenceRunsAreOneRankAndAnExpectedFindingIsAnXfail) {
  scenario_.checks = {"replica_weights", "reference"};
  launcher_.outcomes["main"].diverge_rank = 1;
  launcher_.outcomes["main"].diverge_step = 2;
  launcher_.outcomes["reference"].ending = LaunchEnding::kCrash;  // its checker cannot judge
  ExpectedFinding e;
  e.checker = "replica_weights";
  e.step = 2;
  scenario_.expect_fail = {e};
  const ScenarioResult r = Run();
  ASSERT_EQ(launcher_.specs.size(), 3u);
  EXPECT_EQ(launcher_.specs[1].ranks, 1);
  EXPECT_EQ(launcher_.specs[1].rank_command.back(), "reference");
  EXPECT_EQ(launcher_.specs[2].rank_command.back(), "reference-split");
  EXPECT_EQ(Verdict(r, "replica_weights")->outcome, Outcome::kXfail);
  EXPECT_EQ(Verdict(r, "reference")->outcome, Outcome::kError);
  EXPECT_EQ(r.outcome, Outcome::kError) << r.reason;
  EXPECT_NE(r.reason.find("the reference run did not complete"), std::string::npos) << r.reason;
}

TEST_F(ScenarioRunnerTest, ACompanionTheProgramCannotMakeSkipsItsChecker) {
  program_.reference = false;
  scenario_.checks = {"replica_weights", "reference"};
  const ScenarioResult r = Run();
  EXPECT_EQ(launcher_.specs.size(), 1u);
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  ASSERT_NE(Verdict(r, "reference"), nullptr);
  EXPECT_EQ(Verdict(r, "reference")->outcome, Outcome::kSkipped);
  EXPECT_EQ(Verdict(r, "reference")->skip_reason, "the rank program cannot make the reference run it needs");
}

TEST_F(ScenarioRunnerTest, AnUnknownCheckerIsTheRegistrysErrorFinding) {
  scenario_.checks = {"finite", "no_such_checker"};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].message, "no checker named 'no_such_checker'");
  EXPECT_EQ(Verdict(r, "no_such_checker")->outcome, Outcome::kError);
  EXPECT_EQ(Verdict(r, "finite")->outcome, Outcome::kPass);
}

TEST_F(ScenarioRunnerTest, AHangIsTheHangCheckersFinding) {
  scenario_.checks = {"hang", "crash"};
  launcher_.outcomes["main"].ending = LaunchEnding::kHang;
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].checker, "hang");
  EXPECT_EQ(Verdict(r, "hang")->outcome, Outcome::kFail);
  EXPECT_EQ(Verdict(r, "crash")->outcome, Outcome::kPass);
}

// How the launch ended is judged even when `checks` leaves its checker out.
TEST_F(ScenarioRunnerTest, ACrashOrAHangNeverPassesForWantOfItsChecker) {
  scenario_.checks = {"replica_weights"};
  for (const auto& [ending, checker] : {std::pair{LaunchEnding::kCrash, "crash"}, std::pair{LaunchEnding::kHang, "hang"}}) {
    SCOPED_TRACE(checker);
    launcher_.outcomes["main"].ending = ending;
    const ScenarioResult r = Run();
    EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
    ASSERT_EQ(r.findings.size(), 1u);
    EXPECT_EQ(r.findings[0].checker, checker);
    ASSERT_NE(Verdict(r, checker), nullptr);
    EXPECT_EQ(Verdict(r, checker)->outcome, Outcome::kFail);
    EXPECT_EQ(Verdict(r, "replica_weights")->outcome, Outcome::kPass);
  }
  // A clean run adds nothing to what `checks` asked for.
  launcher_.outcomes["main"].ending = LaunchEnding::kClean;
  const ScenarioResult clean = Run();
  EXPECT_EQ(clean.outcome, Outcome::kPass) << clean.reason;
  EXPECT_EQ(clean.checkers.size(), 1u);
}

TEST_F(ScenarioRunnerTest, AStartUpTimeoutIsTheStartupCheckersFinding) {
  scenario_.checks = {"replica_weights", "crash"};
  scenario_.startup_timeout_s = 7;
  launcher_.outcomes["main"].ending = LaunchEnding::kStartupTimeout;
  launcher_.outcomes["main"].write_steps = false;
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].checker, "startup");
  EXPECT_EQ(r.findings[0].details.at("startup_timeout_s"), "7");
  ASSERT_NE(Verdict(r, "startup"), nullptr);
  EXPECT_EQ(Verdict(r, "startup")->outcome, Outcome::kFail);
}

TEST_F(ScenarioRunnerTest, WithoutAScenarioFileScenarioBoundCheckersAreSkipped) {
  scenario_.checks = {"replica_weights", "discovery_count", "golden", "hang"};
  program_.users_program = true;
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  EXPECT_EQ(Verdict(r, "replica_weights")->outcome, Outcome::kPass);
  EXPECT_EQ(Verdict(r, "hang")->outcome, Outcome::kPass);
  EXPECT_EQ(Verdict(r, "discovery_count")->outcome, Outcome::kPass);  // judges the traces' own records
  EXPECT_EQ(Verdict(r, "golden")->outcome, Outcome::kSkipped);
  EXPECT_NE(Verdict(r, "golden")->skip_reason.find("there is no scenario"), std::string::npos);
}

// config_agreement judges the headers the ranks wrote, for `run` (a scenario file) and `exec`
// (none) alike: quiet when the ranks agree, the odd rank named when one sets NCCL_ALGO otherwise.
TEST_F(ScenarioRunnerTest, RanksThatDisagreeAboutTheirWorldAreNamedWithOrWithoutAScenarioFile) {
  scenario_.ranks = 3;
  scenario_.checks = {"replica_weights", "config_agreement"};
  for (bool users_program : {false, true}) {
    SCOPED_TRACE(users_program ? "exec" : "run");
    RunOptions options;
    program_.users_program = users_program;
    launcher_.outcomes["main"].environment = {{0, {{"NCCL_ALGO", "Ring"}}}, {1, {{"NCCL_ALGO", "Ring"}}},
                                              {2, {{"NCCL_ALGO", "Ring"}}}};
    ScenarioResult r = Run(options);
    EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
    EXPECT_EQ(Verdict(r, "config_agreement")->outcome, Outcome::kPass);
    fs::remove_all(out_ / "s");
    launcher_.outcomes["main"].environment[2] = {{"NCCL_ALGO", "Tree"}};
    r = Run(options);
    EXPECT_EQ(r.outcome, Outcome::kFail);
    ASSERT_EQ(r.findings.size(), 1u);
    EXPECT_EQ(r.findings[0].checker, "config_agreement");
    EXPECT_EQ(r.findings[0].ranks, (std::vector<int>{2}));
    EXPECT_EQ(r.findings[0].details.at("field"), "environment.NCCL_ALGO");
    fs::remove_all(out_ / "s");
  }
}

TEST_F(ScenarioRunnerTest, WithoutAScenarioFileNoTraceOrNoStepIsAnErrorNotAPass) {
  scenario_.checks = {"replica_weights"};
  RunOptions options;
  program_.users_program = true;
  launcher_.outcomes["main"].write_traces = false;
  ScenarioResult r = Run(options);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("no trace from rank 0 (exited with code 0), rank 1"), std::string::npos) << r.reason;
  // No log says what the probe saw: the reason does not guess that the program never initialized.
  EXPECT_NE(r.reason.find("the probe said nothing"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("never initialized"), std::string::npos) << r.reason;

  launcher_.outcomes["main"].write_traces = true;
  launcher_.outcomes["main"].write_steps = false;
  r = Run(options);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("never stepped an optimizer"), std::string::npos) << r.reason;
}

// --compare in-band: rank 0's trace carries the ranks' own findings. When they are the post-run
// ones the report shows them once; when they differ the harness is broken (error, both named).
TEST_F(ScenarioRunnerTest, AnInBandFindingEqualToThePostRunOneIsReportedOnce) {
  scenario_.checks = {"replica_weights"};
  scenario_.ranks = 4;
  launcher_.outcomes["main"].diverge_rank = 1;
  launcher_.outcomes["main"].diverge_step = 3;
  const ScenarioResult post_run_only = Run();
  ASSERT_EQ(post_run_only.findings.size(), 1u);
  launcher_.outcomes["main"].rank0_log = {"hello", InBandFindingLine(post_run_only.findings[0])};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kFail) << r.reason;
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].checker, "replica_weights");
}

TEST_F(ScenarioRunnerTest, AnInBandFindingThatDiffersFromThePostRunOneIsAHarnessError) {
  scenario_.checks = {"replica_weights"};
  scenario_.ranks = 4;
  launcher_.outcomes["main"].diverge_rank = 1;
  launcher_.outcomes["main"].diverge_step = 3;
  const ScenarioResult post_run_only = Run();
  ASSERT_EQ(post_run_only.findings.size(), 1u);
  Finding other = post_run_only.findings[0];
  other.ranks = {2};
  launcher_.outcomes["main"].rank0_log = {InBandFindingLine(other)};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("in-band and post-run comparisons disagree"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("in-band found replica_weights at step 3"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("post-run found replica_weights at step 3"), std::string::npos) << r.reason;
}


// The resolve stage: the command line's overrides are applied once, and every launch of a program
// that takes a scenario file gets the resolved file in its own folder; its ranks apply nothing.
TEST_F(ScenarioRunnerTest, EachLaunchHandsItsRanksTheResolvedScenarioFile) {
  scenario_.checks = {"replica_weights", "determinism"};
  RunOptions options;
  options.overrides.ranks = 4;
  options.overrides.backend = Backend::kMpi;
  const ScenarioResult r = Run(options);
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  EXPECT_EQ(r.ranks, 4);
  ASSERT_EQ(program_.scenario_files.size(), 2u);
  EXPECT_EQ(program_.scenario_files[0], out_ / "s" / "scenario.yaml");
  EXPECT_EQ(program_.scenario_files[1], out_ / "s" / "repeat" / "scenario.yaml");
  EXPECT_EQ(launcher_.specs[0].ranks, 4);
  for (const fs::path& file : program_.scenario_files) {
    LoadOptions load;
    load.resolved = true;
    Result<Scenario> resolved = LoadScenarioFile(file, load, nullptr);
    ASSERT_TRUE(resolved.ok()) << file << ": " << resolved.status().ToString();
    EXPECT_EQ(resolved->ranks, 4);
    EXPECT_EQ(resolved->backend, Backend::kMpi);
    EXPECT_EQ(resolved->name, "s");
  }
}

TEST_F(ScenarioRunnerTest, AProgramWithoutAScenarioFileGetsNone) {
  program_.users_program = true;
  scenario_.checks = {"replica_weights"};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
  ASSERT_EQ(program_.scenario_files.size(), 1u);
  EXPECT_TRUE(program_.scenario_files[0].empty());
  EXPECT_FALSE(fs::exists(out_ / "s" / "scenario.yaml"));
  EXPECT_EQ(r.mode, "fake");
  EXPECT_EQ(r.backend, "") << "the fake traces name no backend";
}

TEST_F(ScenarioRunnerTest, ARefusedScenarioStartsNothing) {
  program_.refusal = Refusal{Outcome::kSkipped, "this machine cannot"};
  const ScenarioResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_EQ(r.reason, "this machine cannot");
  EXPECT_TRUE(launcher_.specs.empty());

  program_.refusal.reset();
  scenario_.slices = 2;
  RunOptions options;
  options.overrides.ranks = 3;  // not a multiple of the slices
  const ScenarioResult broken = Run(options);
  EXPECT_EQ(broken.outcome, Outcome::kError);
  EXPECT_EQ(broken.reason.rfind("--ranks: ", 0), 0u) << broken.reason;
  EXPECT_TRUE(launcher_.specs.empty());
}

}  // namespace
}  // namespace lockstep
