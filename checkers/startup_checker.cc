#include "checkers/startup_checker.h"

#include <sstream>
#include <string>

namespace lockstep {

std::vector<Finding> StartupChecker::Check(const CheckContext& context) const {
  if (context.launch.ending != LaunchEnding::kStartupTimeout) return {};
  Finding f;
  f.checker = std::string(name());
  f.ranks = context.launch.stalled_ranks;
  f.message = context.launch.message;
  std::ostringstream seconds;  // 30, 0.5: as the scenario says it, not 30.000000
  seconds << context.scenario.startup_timeout_s;
  f.details["startup_timeout_s"] = seconds.str();
  return {f};
}

}  // namespace lockstep
