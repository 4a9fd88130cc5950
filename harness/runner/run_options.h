// What `lockstep run`, `exec` and `selftest` ask of the runner, after flag parsing.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/launcher/launcher.h"
#include "harness/scenario/scenario_overrides.h"

namespace lockstep {

struct RunOptions {
  std::filesystem::path out_dir = "out";
  LauncherKind launcher = LauncherKind::kMpirun;
  ScenarioOverrides overrides;              // applied to every scenario once, when it is resolved
  bool fail_fast = false;
  std::vector<std::string> mpirun_args;
  HostPlacement hosts;                      // several hosts: --nodes, --ntasks-per-node, ...
  std::filesystem::path rank_program;       // bin/lockstep-rank
  std::filesystem::path fixtures_dir;       // for golden files
  std::string command_line;
};

}  // namespace lockstep
