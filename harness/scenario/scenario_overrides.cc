#include "harness/scenario/scenario_overrides.h"

#include <algorithm>
#include <string>

#include "harness/scenario/scenario_limits.h"

namespace lockstep {
namespace {

std::string Where(const Scenario& s) {
  std::string where = s.location.file.empty() ? "" : s.location.file + ": ";
  return where + "scenario " + s.name + ": ";
}

}  // namespace

Status OverrideRanks(int ranks, Scenario& s) {
  const std::string n = std::to_string(ranks);
  if (ranks < 1 || ranks > kMaxRanks) {
    return InvalidArgumentError("ranks " + n + " is outside [1, " + std::to_string(kMaxRanks) + "]");
  }
  if (ranks % s.slices != 0) {
    return InvalidArgumentError(Where(s) + n + " ranks do not split into its " + std::to_string(s.slices) +
                                " slices (ranks must be a multiple of slices)");
  }
  for (const Injection& injection : s.inject) {
    for (int r : injection.ranks) {
      if (r >= ranks) {
        return InvalidArgumentError(Where(s) + "its " + injection.kind + " injection acts on rank " +
                                    std::to_string(r) + ", which a world of " + n + " does not have");
      }
    }
  }
  for (const ExpectedFinding& expected : s.expect_fail) {
    for (int r : expected.ranks) {
      if (r >= ranks) {
        return InvalidArgumentError(Where(s) + "it expects a " + expected.checker + " finding on rank " +
                                    std::to_string(r) + ", which a world of " + n + " does not have");
      }
    }
  }
  s.ranks = ranks;
  return Status::Ok();
}

Result<Scenario> ApplyOverrides(const ScenarioOverrides& overrides, Scenario s) {
  if (overrides.backend) s.backend = *overrides.backend;
  if (overrides.device) s.device = *overrides.device;
  if (overrides.ranks) LOCKSTEP_RETURN_IF_ERROR(OverrideRanks(*overrides.ranks, s).WithContext("--ranks"));
  if (overrides.hang_timeout_s) s.hang_timeout_s = *overrides.hang_timeout_s;
  if (overrides.quiet_timeout_s) s.quiet_timeout_s = *overrides.quiet_timeout_s;
  if (overrides.startup_timeout_s) s.startup_timeout_s = *overrides.startup_timeout_s;
  for (const std::string& check : overrides.extra_checks) {
    if (std::find(s.checks.begin(), s.checks.end(), check) == s.checks.end()) s.checks.push_back(check);
  }
  return s;
}

}  // namespace lockstep
