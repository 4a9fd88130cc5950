// synced_grads: the gradients each rank applies, after the sync, are equal across ranks. With
// replica_weights it tells "a gradient was not reduced" (this fires at the same step) from "the
// update diverged" (only replica_weights fires). Sharded gradients (zero1) are recorded with
// replicated=false and not compared.
#pragma once

#include "checkers/checker.h"
#include "checkers/replica_comparison.h"

namespace lockstep {

class SyncedGradsChecker : public Checker {
 public:
  std::string_view name() const override { return "synced_grads"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;

 private:
  ReplicaComparison what() const;
};

}  // namespace lockstep
