#include "checkers/internal/first_step_finding.h"

#include <string>

namespace lockstep::internal {

Finding* FirstStepFinding::FirstAt(const std::string& checker, int64_t step) {
  if (first_) {
    ++later_steps_;
    return nullptr;
  }
  first_ = Finding{};
  first_->checker = checker;
  first_->step = step;
  return &*first_;
}

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
