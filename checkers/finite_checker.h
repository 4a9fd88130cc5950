// finite: loss and global gradient norm are finite at every step after the first (step 0 records
// NaN for both by definition), and so is every recorded tensor norm. The finding names the first
// step with a non-finite value, the ranks that have one there, and the first such tensor. A
// record without any gradient has no gradient norm (the probe writes NaN): not judged here, but by
// `stalled_params` (an optimizer that stepped over parameters none of which had a gradient).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class FiniteChecker : public Checker {
 public:
  std::string_view name() const override { return "finite"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
