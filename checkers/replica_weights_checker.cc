#include "checkers/replica_weights_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

ReplicaComparison ReplicaWeightsChecker::what() const {
  return ReplicaComparison{std::string(name()), TensorKind::kParam, "parameters"};
}

std::vector<Finding> ReplicaWeightsChecker::Check(const CheckContext& context) const { return CompareReplicas(context, what()); }

std::unique_ptr<StepJudge> ReplicaWeightsChecker::StartJudge(const JudgeStart& /*start*/) const { return StartReplicaJudge(what()); }

}  // namespace lockstep
