#include "harness/runner/launch_stage.h"

#include "checkers/checker_registry.h"
#include "harness/runner/run_directory.h"
#include "harness/scenario/scenario_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

bool OneRank(RankRun run) { return run == RankRun::kReference || run == RankRun::kReferenceSplit; }

}  // namespace

LaunchStage::LaunchStage(const RankProgram& program, RankLauncher& launcher, LauncherKind kind,
                         std::vector<std::string> mpirun_args, HostPlacement hosts, RunListener* listener)
    : program_(program),
      launcher_(launcher),
      kind_(kind),
      mpirun_args_(std::move(mpirun_args)),
      hosts_(std::move(hosts)),
      listener_(listener) {}

Result<LaunchReport> LaunchStage::Launch(const Scenario& scenario, const fs::path& dir, RankRun run) {
  LaunchSpec spec;
  spec.kind = kind_;
  spec.ranks = OneRank(run) ? 1 : scenario.ranks;
  spec.trace_dir = dir / "traces";
  spec.log_dir = dir / "logs";
  spec.hang_timeout_s = scenario.hang_timeout_s;
  spec.quiet_timeout_s = scenario.quiet_timeout_s;
  spec.startup_timeout_s = scenario.startup_timeout_s;
  spec.timeout_s = scenario.timeout_s;
  spec.mpirun_args = mpirun_args_;
  spec.hosts = hosts_;
  // A previous run of the same scenario in this out dir; never a folder lockstep did not make.
  LOCKSTEP_RETURN_IF_ERROR(ResetScenarioDirectory(dir));
  std::error_code ec;
  fs::create_directories(spec.trace_dir, ec);
  fs::create_directories(spec.log_dir, ec);
  LaunchPaths paths{spec.trace_dir, {}};
  if (program_.TakesScenarioFile()) {
    paths.scenario_file = dir / "scenario.yaml";
    LOCKSTEP_RETURN_IF_ERROR(WriteScenarioFile(
        scenario, paths.scenario_file,
        "The scenario as `lockstep` resolved it for this launch (" + std::string(ToString(run)) +
            "), from " + scenario.location.file + ", every key set; its ranks read this file."));
  }
  RankInvocation invocation = program_.Invocation(scenario, run, paths);
  spec.rank_command = std::move(invocation.argv);
  spec.env = std::move(invocation.env);

  ProgressCallback progress;
  if (run == RankRun::kMain && listener_) {
    progress = [this, &scenario](int rank, int64_t step) {
      if (rank == 0) listener_->OnProgress(scenario.name, step, scenario.steps);
    };
  }
  return launcher_.Launch(spec, progress);
}

CompanionTraces LaunchStage::LaunchCompanions(const Scenario& scenario, const fs::path& dir,
                                            std::map<std::string, std::string> skip) {
  CompanionTraces out;
  out.skip = std::move(skip);
  auto companion = [&](const std::string& checker, RankRun kind, std::optional<StreamedTraces>* traces) {
    if (!out.interrupted_during.empty() || out.skip.count(checker)) return;
    const std::string sub = ToString(kind);
    if (!program_.Supports(kind)) {
      out.skip[checker] = "the rank program cannot make the " + sub + " run it needs";
      return;
    }
    Result<LaunchReport> launched = Launch(scenario, dir / sub, kind);
    if (launched.ok() && launched->ending == LaunchEnding::kClean) {
      Result<StreamedTraces> read =
          ReadTracesWhole(dir / sub / "traces", OneRank(kind) ? 1 : scenario.ranks, "a companion run");
      if (read.ok()) {
        *traces = std::move(read).value();
        return;
      }
      launched = read.status();
    }
    if (launched.ok() && launched->ending == LaunchEnding::kInterrupted) {
      // Not a finding of the checker: the whole run stops here, as for the main launch.
      out.interrupted_during = sub;
      return;
    }
    Finding f;
    f.checker = checker;
    f.outcome = FindingOutcome::kError;
    f.message = "the " + sub + " run did not complete: " +
                (launched.ok() ? std::string(ToString(launched->ending)) + " " + launched->message
                               : launched.status().ToString());
    out.findings_instead[checker].push_back(f);
  };
  // The registry says which checker needs which run: the 1-rank reference; the same global batch
  // in the N ranks' pieces, whose distance to the plain reference is the rounding noise that
  // `reference` derives its tolerance from; a repeat of the run.
  for (const auto& [checker, needed] : CompanionRuns(scenario.checks)) {
    switch (needed) {
      case Companion::kReference: companion(checker, RankRun::kReference, &out.reference); break;
      case Companion::kReferenceSplit: companion(checker, RankRun::kReferenceSplit, &out.reference_split); break;
      case Companion::kRepeat: companion(checker, RankRun::kRepeat, &out.repeat); break;
    }
  }
  return out;
}

}  // namespace lockstep
