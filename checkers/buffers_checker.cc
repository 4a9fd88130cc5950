#include "checkers/buffers_checker.h"

#include "checkers/replica_comparison.h"

namespace lockstep {

std::vector<Finding> BuffersChecker::Check(const CheckContext& context) const {
  return CompareReplicas(context, ReplicaComparison{std::string(name()), TensorKind::kBuffer, "buffers"});
}

}  // namespace lockstep
