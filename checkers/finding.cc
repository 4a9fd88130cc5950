#include "checkers/finding.h"

namespace lockstep {

const char* ToString(FindingOutcome outcome) {
  switch (outcome) {
    case FindingOutcome::kFail: return "fail";
    case FindingOutcome::kExpected: return "expected";
    case FindingOutcome::kError: return "error";
  }
  return "unknown";
}

}  // namespace lockstep
