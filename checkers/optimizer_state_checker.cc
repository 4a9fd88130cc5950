#include "checkers/optimizer_state_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

ReplicaComparison OptimizerStateChecker::what() const {
  return ReplicaComparison{std::string(name()), TensorKind::kOptimizerState, "replicated optimizer state tensors"};
}

std::vector<Finding> OptimizerStateChecker::Check(const CheckContext& context) const { return CompareReplicas(context, what()); }

std::unique_ptr<StepJudge> OptimizerStateChecker::StartJudge(const JudgeStart& /*start*/) const { return StartReplicaJudge(what()); }

}  // namespace lockstep
