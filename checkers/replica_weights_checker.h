// replica_weights: every replicated parameter has the same digest on every rank after every step
// (step 0: after initialization and the initial broadcast).
#pragma once

#include "checkers/checker.h"
#include "checkers/replica_comparison.h"

namespace lockstep {

class ReplicaWeightsChecker : public Checker {
 public:
  std::string_view name() const override { return "replica_weights"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;

 private:
  ReplicaComparison what() const;
};

}  // namespace lockstep
