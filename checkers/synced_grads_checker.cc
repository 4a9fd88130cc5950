#include "checkers/synced_grads_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

ReplicaComparison SyncedGradsChecker::what() const {
  return ReplicaComparison{std::string(name()), TensorKind::kGrad, "gradients after sync"};
}

std::vector<Finding> SyncedGradsChecker::Check(const CheckContext& context) const { return CompareReplicas(context, what()); }

std::unique_ptr<StepJudge> SyncedGradsChecker::StartJudge(const JudgeStart& /*start*/) const { return StartReplicaJudge(what()); }

}  // namespace lockstep
