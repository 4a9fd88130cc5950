// The one finding of a step judge that reports the first step its check fails at and counts the
// steps after it that fail too (tp_inputs, optimizer_settings, forward_passes): nothing that grows
// with steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/result/finding.h"

namespace lockstep::internal {

class FirstStepFinding {
 public:
  // At a step the check fails at: the finding to fill in, with its checker and step set, when this
  // is the first such step; null when an earlier step's is kept (this one is then only counted).
  Finding* FirstAt(const std::string& checker, int64_t step);
  // The finding, saying "(and at N later steps)" with `details.later_steps`; none if no step failed.
  std::vector<Finding> Take() const;

 private:
  std::optional<Finding> first_;
  int64_t later_steps_ = 0;
};

}  // namespace lockstep::internal
