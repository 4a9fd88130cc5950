#include "checkers/optimizer_state_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

std::vector<Finding> OptimizerStateChecker::Check(const CheckContext& context) const {
  return CompareReplicas(context, ReplicaComparison{std::string(name()), TensorKind::kOptimizerState, "replicated optimizer state tensors"});
}

}  // namespace lockstep
