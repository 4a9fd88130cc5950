// `bin/lockstep-rank` as a rank program: the one place its command line is built, for
// `lockstep run` (the run and its companions) and `lockstep repro` (stop at a step, save tensors).
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
  std::optional<Backend> backend;  // overrides the scenario's backend
  std::optional<Device> device;    // overrides the scenario's device
  std::optional<int> ranks;        // overrides the scenario's world size (a reference-split needs it too)
  bool fail_fast = false;          // live mode, on the run and its repeat
  std::optional<ReproTarget> repro;  // set: the program supports RankRun::kRepro
};

class LockstepRankProgram : public RankProgram {
 public:
  explicit LockstepRankProgram(LockstepRankOptions options);
  bool Supports(RankRun run) const override;
  RankInvocation Invocation(const Scenario& scenario, RankRun run,
                            const std::filesystem::path& trace_dir) const override;

 private:
  LockstepRankOptions options_;
  std::map<std::string, std::string> recorder_env_;  // the native recorders' variables, every launch
};

}  // namespace lockstep
