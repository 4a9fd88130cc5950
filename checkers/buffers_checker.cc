#include "checkers/buffers_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

ReplicaComparison BuffersChecker::what() const {
  return ReplicaComparison{std::string(name()), TensorKind::kBuffer, "buffers"};
}

std::vector<Finding> BuffersChecker::Check(const CheckContext& context) const { return CompareReplicas(context, what()); }

std::unique_ptr<StepJudge> BuffersChecker::StartJudge(const JudgeStart& /*start*/) const { return StartReplicaJudge(what()); }

}  // namespace lockstep
