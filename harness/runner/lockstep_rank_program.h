// `bin/lockstep-rank` as a rank program: the one place its command line is built, for
// `lockstep run` (the run and its companions) and `lockstep repro` (stop at a step, save tensors).
// Its ranks read the resolved scenario file the runner writes for each launch, so no command-line
// override reaches them as a flag.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/runner/rank_program.h"

namespace lockstep {

// What `lockstep repro` asks the ranks for: stop after `stop_after_step` and save the tensors
// matching `dump_patterns` under `dump_dir`.
struct ReproTarget {
  int64_t stop_after_step = 0;
  std::vector<std::string> dump_patterns;
  std::filesystem::path dump_dir;
};

struct LockstepRankOptions {
  std::filesystem::path program;  // bin/lockstep-rank
  bool fail_fast = false;          // live mode, on the run and its repeat
  std::optional<ReproTarget> repro;  // set: the program supports RankRun::kRepro
};

class LockstepRankProgram : public RankProgram {
 public:
  explicit LockstepRankProgram(LockstepRankOptions options);
  bool Supports(RankRun run) const override;
  bool TakesScenarioFile() const override { return true; }
  bool MayRunUnobserved() const override { return false; }
  // backend nccl without NCCL built or a GPU visible: skipped; device cuda without a GPU, or
  // backend mpi under the local launcher: an error.
  std::optional<Refusal> Refuses(const Scenario& scenario, LauncherKind launcher) const override;
  RunLabel Label(const Scenario& scenario) const override;
  RankInvocation Invocation(const Scenario& scenario, RankRun run, const LaunchPaths& paths) const override;

 private:
  LockstepRankOptions options_;
  std::map<std::string, std::string> recorder_env_;  // the native recorders' variables, every launch
};

}  // namespace lockstep
