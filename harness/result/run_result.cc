#include "harness/result/run_result.h"

namespace lockstep {
template <>
const NameTable<Outcome>& NamesOf<Outcome>() {
  static const NameTable<Outcome> kTable = {
      {"pass", Outcome::kPass},   {"fail", Outcome::kFail},       {"xfail", Outcome::kXfail},
      {"xpass", Outcome::kXpass}, {"error", Outcome::kError},     {"timeout", Outcome::kTimeout},
      {"skipped", Outcome::kSkipped},
  };
  return kTable;
}

const char* ToString(Outcome outcome) { return NameOf(outcome); }

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
