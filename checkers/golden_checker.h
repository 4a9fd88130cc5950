// golden (opt-in): the loss curve and the final replicated tensors against the golden file of
// this scenario and platform (golden_file.h). With tolerances.golden_rtol == 0 losses must be
// bitwise equal and final digests identical; with golden_rtol > 0 losses and final tensor norms
// must agree within that relative tolerance (digests cannot be "close"). A missing golden file is
// an error finding with the command that creates it.
//
// It judges step by step (checkers/step_judge.h): the golden file is read when its judge starts,
// the final tensors are compared as the golden final step streams past, and the loss curve is
// read from the step scalars, which the folded traces keep.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class GoldenChecker : public Checker {
 public:
  std::string_view name() const override { return "golden"; }
  std::string_view needs_scenario() const override { return "the scenario's golden file and tolerance"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;
};

}  // namespace lockstep
