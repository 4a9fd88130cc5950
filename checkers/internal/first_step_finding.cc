#include "checkers/internal/first_step_finding.h"

#include <string>

namespace lockstep::internal {

std::vector<Finding> FirstStepFinding::Take() const {
  if (!first_) return {};
  Finding f = *first_;
  if (later_steps_ > 0) {
    f.message += " (and at " + std::to_string(later_steps_) + " later step" + (later_steps_ == 1 ? "" : "s") + ")";
    f.details["later_steps"] = std::to_string(later_steps_);
  }
  return {f};
}

}  // namespace lockstep::internal
