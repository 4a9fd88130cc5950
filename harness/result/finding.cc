#include "harness/result/finding.h"

#include <array>
#include <utility>

namespace lockstep {
namespace {

// The one table of finding outcome names, read both ways (report.json writes and reads them).
constexpr std::array<std::pair<FindingOutcome, const char*>, 3> kFindingOutcomeNames = {{
    {FindingOutcome::kFail, "fail"},
    {FindingOutcome::kExpected, "expected"},
    {FindingOutcome::kError, "error"},
}};

}  // namespace

const char* ToString(FindingOutcome outcome) {
  for (const auto& [value, name] : kFindingOutcomeNames) {
    if (value == outcome) return name;
  }
  return "unknown";
}

std::optional<FindingOutcome> FindingOutcomeFromString(const std::string& s) {
  for (const auto& [value, name] : kFindingOutcomeNames) {
    if (s == name) return value;
  }
  return std::nullopt;
}

}  // namespace lockstep
