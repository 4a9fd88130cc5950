#include "checkers/synced_grads_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

std::vector<Finding> SyncedGradsChecker::Check(const CheckContext& context) const {
  return CompareReplicas(context, ReplicaComparison{std::string(name()), TensorKind::kGrad, "gradients after sync"});
}

}  // namespace lockstep
