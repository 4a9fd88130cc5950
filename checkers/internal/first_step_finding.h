// The one finding of a step judge that reports the first step its check fails at and counts the
// steps after it that fail too (tp_inputs, optimizer_settings): nothing that grows with steps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "harness/result/finding.h"

namespace lockstep::internal {

class FirstStepFinding {
 public:
  // Whether the first failing step's finding is kept (a later failing step is then only counted).
  bool found() const { return first_.has_value(); }
  void CountLater() { ++later_steps_; }
  // The first failing step's finding, empty, for the judge to fill in.
  Finding& Start() {
    first_ = Finding{};
    return *first_;
  }
  // The finding, saying "(and at N later steps)" with `details.later_steps`; none if no step failed.
  std::vector<Finding> Take() const;

 private:
  std::optional<Finding> first_;
  int64_t later_steps_ = 0;
};

}  // namespace lockstep::internal
