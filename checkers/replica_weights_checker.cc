#include "checkers/replica_weights_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

std::vector<Finding> ReplicaWeightsChecker::Check(const CheckContext& context) const {
  return CompareReplicas(context, ReplicaComparison{std::string(name()), TensorKind::kParam, "parameters"});
}

}  // namespace lockstep
