// buffers: module buffers (BatchNorm running statistics) are equal across ranks after every step.
#pragma once

#include "checkers/checker.h"
#include "checkers/replica_comparison.h"

namespace lockstep {

class BuffersChecker : public Checker {
 public:
  std::string_view name() const override { return "buffers"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
  std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const override;

 private:
  ReplicaComparison what() const;
};

}  // namespace lockstep
