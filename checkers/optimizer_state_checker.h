// optimizer_state: optimizer state that is replicated (ddp: momentum, exp_avg, ...) is equal across
// ranks; sharded state (zero1, TensorRecord::replicated == false) is not compared.
#pragma once

#include "checkers/checker.h"
#include "checkers/replica_comparison.h"

namespace lockstep {

class OptimizerStateChecker : public Checker {
 public:
  std::string_view name() const override { return "optimizer_state"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;

 private:
  ReplicaComparison what() const;
};

}  // namespace lockstep
