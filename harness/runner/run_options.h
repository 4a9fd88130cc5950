// What `lockstep run` was asked to do, after flag parsing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/launcher/launcher.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

struct RunOptions {
  std::filesystem::path out_dir = "out";
  LauncherKind launcher = LauncherKind::kMpirun;
  std::optional<Backend> backend;           // overrides every scenario's backend
  std::optional<Device> device;             // overrides every scenario's device
  std::optional<int> ranks;                 // overrides every scenario's world size (checked by OverrideRanks)
  std::optional<double> hang_timeout_s;     // overrides every scenario's hang_timeout_s
  std::optional<double> startup_timeout_s;  // overrides every scenario's startup_timeout_s
  bool fail_fast = false;
  std::vector<std::string> extra_checks;    // --check NAME: added to every scenario's checks
  std::vector<std::string> mpirun_args;
  std::filesystem::path rank_program;       // bin/lockstep-rank
  std::filesystem::path fixtures_dir;       // for golden files
  std::string command_line;
  // `lockstep exec`: the ranks run a program that is not lockstep's and there is no scenario file.
  // Checkers that need one are skipped with their reason, and a launch in which a rank wrote no
  // trace or none recorded a step is a harness error (nothing was checked), never a pass.
  bool no_scenario_file = false;
};

}  // namespace lockstep
