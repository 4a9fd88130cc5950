// The judge stage: what a run left on disk (traces, logs, how its launch ended, its companion
// runs) turned into the scenario's verdict. The one way to the checkers for `lockstep run`,
// `exec`, `check` and the self-test: each of them only decides what it hands over.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkers/streamed_traces.h"
#include "harness/result/finding.h"
#include "harness/result/launch_report.h"
#include "harness/result/run_result.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

// What the companion runs of a scenario left for the checkers that compare with them.
struct CompanionTraces {
  std::optional<StreamedTraces> reference, reference_split, repeat;  // read whole, when complete
  std::map<std::string, std::string> skip;                          // checker -> why it is not run
  std::map<std::string, std::vector<Finding>> findings_instead;      // a companion it needs failed
  std::string interrupted_during;                                     // the companion run cut short
};

// What the traces must hold before a verdict; short of it nothing was checked, and the run is an
// error, never a pass.
enum class TraceDemand {
  kNone,            // lockstep-rank: a rank without steps is what the crash and startup checkers judge
  kAnyStep,         // recorded traces (`check`): every rank's readable file, and a step somewhere
  kEveryRankSteps,  // the user's program (`exec`): every rank traced and stepped (the probe loaded)
};

struct Evidence {
  Scenario scenario;                    // resolved: checks, expectations, tolerances, ranks
  std::filesystem::path trace_dir;      // rank-<r>.trace
  std::filesystem::path log_dir;        // rank-<r>.log; empty: nothing was launched
  std::optional<LaunchReport> launch;   // how the ranks ended; none: traces recorded elsewhere
  bool have_scenario_file = true;       // false: the checkers that need one are skipped
  TraceDemand demand = TraceDemand::kNone;
  CompanionTraces companions;
  std::filesystem::path fixtures_dir;   // golden files
  std::string platform;                 // golden files' key (PlatformFingerprint)
};

// The checkers skipped for want of a scenario file or a launch, with why (none when there is a
// scenario file): the launch stage makes no companion run for them.
std::map<std::string, std::string> SkippedForWantOfInputs(const std::vector<std::string>& checks,
                                                          bool have_scenario_file, bool have_launch);

// The checks that judge `launch`: the scenario's, plus the checker of how it ended badly (crash,
// hang), so that a run whose ranks died never passes because `checks` left that checker out.
std::vector<std::string> ChecksJudging(std::vector<std::string> checks, const std::optional<LaunchReport>& launch);

// Whether a launch that ended so is judged by how it ended alone (it could not start, was
// interrupted, stopped on a harness error, timed out, or never got through start-up): its
// companion runs are not made.
bool EndsBeforeTheChecks(LaunchEnding ending);

// Fills `result` (id, file, mode, ... already set) with the verdict: outcome, reason, findings,
// checker verdicts, series, rank logs, and backend and steps where the traces know them better.
ScenarioResult Judge(const Evidence& evidence, ScenarioResult result);

}  // namespace lockstep
