#include "harness/scenario/ranks_override.h"

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

}  // namespace lockstep
