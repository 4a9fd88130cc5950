// The launch stage: starts the ranks of one scenario through a RankLauncher, the run first and
// then the companion runs its checkers need, each in its own folder (traces/, logs/ and, for a
// program that takes one, the resolved scenario.yaml its ranks read).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness/runner/judge.h"
#include "harness/runner/rank_launcher.h"
#include "harness/runner/rank_program.h"
#include "harness/scenario/scenario.h"
#include "reports/reporter.h"

namespace lockstep {

class LaunchStage {
 public:
  // `program` and `launcher` outlive the stage; `listener` (may be null) hears the run's progress.
  LaunchStage(const RankProgram& program, RankLauncher& launcher, LauncherKind kind,
              std::vector<std::string> mpirun_args, HostPlacement hosts, RunListener* listener);

  // One launch of `scenario` for `run` into `dir`, which is emptied first (ResetScenarioDirectory:
  // never a folder lockstep did not make). An error: the launch could not even be attempted.
  Result<LaunchReport> Launch(const Scenario& scenario, const std::filesystem::path& dir, RankRun run);

  // The companion runs the scenario's checks need (the registry's CompanionRuns), each into
  // dir/<run>/, for the checkers not in `skip`: a run the program cannot make skips its checker, one
  // that fails stands as its checker's error finding. After an interrupt nothing more starts.
  CompanionTraces LaunchCompanions(const Scenario& scenario, const std::filesystem::path& dir,
                                 std::map<std::string, std::string> skip);

 private:
  const RankProgram& program_;
  RankLauncher& launcher_;
  LauncherKind kind_;
  std::vector<std::string> mpirun_args_;
  HostPlacement hosts_;
  RunListener* listener_;
};

}  // namespace lockstep
