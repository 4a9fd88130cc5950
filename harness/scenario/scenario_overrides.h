// What the command line changes in every scenario of a run (`lockstep run --ranks 4 --backend
// gloo ...`), applied in one place: the runner resolves each scenario with them once and hands the
// ranks the resolved scenario (scenario_writer.h), so no rank re-applies a flag. An overridden
// scenario is held to the rules the loader holds a written one to.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

struct ScenarioOverrides {
  std::optional<Backend> backend;
  std::optional<Device> device;
  std::optional<int> ranks;                 // OverrideRanks's rules
  std::optional<double> hang_timeout_s;
  std::optional<double> quiet_timeout_s;
  std::optional<double> startup_timeout_s;
  std::vector<std::string> extra_checks;    // --check NAME: added where the scenario lacks it
};

// Sets s.ranks to `ranks`, or returns InvalidArgument naming the scenario (file and id) and the
// rule it breaks: ranks outside [1, kMaxRanks], not a multiple of `slices`, or fewer ranks than an
// `inject:` or `expect: fail:` entry names. `s` is unchanged on error. (`nccl` takes one rank per
// GPU, so a suite's world follows the machine.)
Status OverrideRanks(int ranks, Scenario& s);

// `s` with every override applied, or InvalidArgument naming the flag (`--ranks: ...`).
Result<Scenario> ApplyOverrides(const ScenarioOverrides& overrides, Scenario s);

}  // namespace lockstep
