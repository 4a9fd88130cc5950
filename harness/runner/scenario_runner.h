// Runs scenarios end to end: launch the ranks, read their traces, run the checkers, match the
// expectations, and build the ScenarioResult that reporters render. The only part that sees the
// launcher, the traces and the checkers at once.
#pragma once

#include <atomic>
#include <vector>

#include "harness/result/run_result.h"
#include "harness/runner/run_options.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"
#include "reports/reporter.h"

namespace lockstep {

class ScenarioRunner {
 public:
  // `listener` may be null.
  ScenarioRunner(RunOptions options, RunListener* listener);

  // Runs every scenario in order; after an interrupt the rest are skipped.
  RunResult RunAll(const std::vector<Scenario>& scenarios);
  ScenarioResult RunOne(const Scenario& scenario);

  bool interrupted() const { return interrupted_; }

 private:
  // One launch of the scenario (the run itself, its 1-rank reference, its repeat).
  struct LaunchOutput {
    LaunchReport report;
    std::vector<RankTrace> traces;
  };
  // `reference_flag`: "" for the N-rank run, else the rank program's flag for a 1-rank
  // reference ("--reference", "--reference-split").
  Result<LaunchOutput> LaunchRanks(const Scenario& scenario, const std::filesystem::path& dir,
                                   const std::string& reference_flag, bool report_progress);

  RunOptions options_;
  RunListener* listener_;
  bool interrupted_ = false;
};

// "libtorch-1.13.0_mpi_cpu-amd-epyc-7b13": what golden files are keyed by.
std::string PlatformFingerprint(const Scenario& scenario);
std::string PlatformFingerprint(const std::string& backend);

}  // namespace lockstep
