// Runs scenarios end to end in three stages, the same for every rank program: resolve (the
// scenario with the command line's overrides, resolved_scenario.h), launch (the run and its
// companion runs, launch_stage.h) and judge (traces to verdict, judge.h). `lockstep run`, `exec`
// and the self-test run through here; `lockstep check` judges recorded traces with the same judge.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/result/run_result.h"
#include "harness/runner/launch_stage.h"
#include "harness/runner/rank_launcher.h"
#include "harness/runner/rank_program.h"
#include "harness/runner/run_options.h"
#include "harness/scenario/scenario.h"
#include "reports/reporter.h"

namespace lockstep {

class ScenarioRunner {
 public:
  // Runs bin/lockstep-rank (options.rank_program) through the real launcher. `listener` may be null.
  ScenarioRunner(RunOptions options, RunListener* listener);
  // Runs `program` through `launcher`; both outlive the runner.
  ScenarioRunner(RunOptions options, RunListener* listener, const RankProgram& program, RankLauncher& launcher);

  // Runs every scenario in order; after an interrupt the rest are skipped.
  RunResult RunAll(const std::vector<Scenario>& scenarios);
  ScenarioResult RunOne(const Scenario& scenario);

  bool interrupted() const { return interrupted_; }

 private:
  ScenarioResult LaunchAndJudge(const Scenario& scenario, ScenarioResult result);

  RunOptions options_;
  RunListener* listener_;
  std::unique_ptr<RankProgram> owned_program_;
  const RankProgram* program_;
  std::unique_ptr<LaunchStage> launches_;
  bool interrupted_ = false;
};

// What a run's report says about where and how it ran, as it starts (duration_s still 0).
RunContext NewRunContext(const RunOptions& options);

// "libtorch-2.11.0_mpi_cpu-amd-epyc-7b13": what golden files are keyed by.
std::string PlatformFingerprint(const Scenario& scenario);
std::string PlatformFingerprint(const std::string& backend);

}  // namespace lockstep
