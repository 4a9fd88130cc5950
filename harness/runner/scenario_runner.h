// Runs scenarios end to end: launch the ranks, read their traces, run the checkers, match the
// expectations, and build the ScenarioResult that reporters render. The only part that sees the
// launcher, the traces and the checkers at once.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "checkers/streamed_traces.h"
#include "harness/result/run_result.h"
#include "harness/runner/rank_launcher.h"
#include "harness/runner/rank_program.h"
#include "harness/runner/run_options.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"
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
  // One launch of the scenario (the run itself, its 1-rank reference, its repeat).
  // `dir`: the scenario's folder for the main run, the companion's folder inside it otherwise.
  Result<LaunchReport> LaunchRanks(const Scenario& scenario, const std::filesystem::path& dir, RankRun run);
  // A companion launch and its traces, read whole for the checker that compares with them.
  struct LaunchOutput {
    LaunchReport report;
    StreamedTraces read;
  };
  Result<LaunchOutput> LaunchCompanion(const Scenario& scenario, const std::filesystem::path& dir, RankRun run);
  // The main run's traces, streamed through the judges of the checkers that will judge `launch`
  // (checkers/streamed_traces.h), started with `start`: read after the companions ran, so that a
  // judge that compares each step with one (reference) has it.
  Result<StreamedTraces> ReadRunTraces(const Scenario& scenario, const LaunchReport& launch,
                                       const std::filesystem::path& dir, const JudgeStart& start);

  RunOptions options_;
  RunListener* listener_;
  std::unique_ptr<RankProgram> owned_program_;
  const RankProgram* program_;
  RankLauncher* launcher_;
  bool interrupted_ = false;
};

// What a run's report says about where and how it ran, as it starts (duration_s still 0).
RunContext NewRunContext(const RunOptions& options);

// "libtorch-1.13.0_mpi_cpu-amd-epyc-7b13": what golden files are keyed by.
std::string PlatformFingerprint(const Scenario& scenario);
std::string PlatformFingerprint(const std::string& backend);

}  // namespace lockstep
