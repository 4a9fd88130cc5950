// config_agreement: what every rank's trace header says about its world before step 1 (torch,
// CUDA, NCCL and driver versions, backend, world size, and the settings of its environment that
// change numerics or collectives: harness/trace/world_settings.h) agrees across ranks. Mismatched
// versions or settings across nodes are a classic cause of hangs and of silent drift. One finding
// per field that differs, naming the odd ranks: those whose value is not the majority's (with no
// majority, the value of the lowest rank among the most common stands for the run).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class ConfigAgreementChecker : public Checker {
 public:
  std::string_view name() const override { return "config_agreement"; }
  bool reads_tensors() const override { return false; }
  bool judges_start_up() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
