#include "harness/result/run_result.h"

#include <array>
#include <utility>

namespace lockstep {
namespace {

constexpr std::array<std::pair<Outcome, const char*>, 7> kOutcomeNames = {{
    {Outcome::kPass, "pass"},
    {Outcome::kFail, "fail"},
    {Outcome::kXfail, "xfail"},
    {Outcome::kXpass, "xpass"},
    {Outcome::kError, "error"},
    {Outcome::kTimeout, "timeout"},
    {Outcome::kSkipped, "skipped"},
}};

}  // namespace

const char* ToString(Outcome outcome) {
  for (const auto& [value, name] : kOutcomeNames) {
    if (value == outcome) return name;
  }
  return "unknown";
}

std::optional<Outcome> OutcomeFromString(const std::string& s) {
  for (const auto& [value, name] : kOutcomeNames) {
    if (s == name) return value;
  }
  return std::nullopt;
}

bool IsFailure(Outcome outcome) {
  switch (outcome) {
    case Outcome::kFail:
    case Outcome::kXpass:
    case Outcome::kError:
    case Outcome::kTimeout:
      return true;
    case Outcome::kPass:
    case Outcome::kXfail:
    case Outcome::kSkipped:
      return false;
  }
  return true;  // an out-of-range value is never reported as success
}

OutcomeCounts CountOutcomes(const RunResult& result) {
  OutcomeCounts counts;
  for (const ScenarioResult& scenario : result.scenarios) {
    ++counts.total;
    switch (scenario.outcome) {
      case Outcome::kPass: ++counts.passed; break;
      case Outcome::kFail: ++counts.failed; break;
      case Outcome::kXfail: ++counts.xfailed; break;
      case Outcome::kXpass: ++counts.xpassed; break;
      case Outcome::kError: ++counts.errors; break;
      case Outcome::kTimeout: ++counts.timeouts; break;
      case Outcome::kSkipped: ++counts.skipped; break;
    }
  }
  return counts;
}

}  // namespace lockstep
