// discovery_count: discovery runs at start-up only, and a once-per-process call once (the
// PyTorch/XLA multi-slice bug, pytorch/xla#8812 and #8954: tracing flash attention ran device
// discovery a second time, in the middle of training, and multi-slice jobs failed or hung).
// It judges the real calls each rank's trace recorded (harness/discovery: lockstep's topology
// routine, MPI through PMPI, torch.distributed through the probe): a call whose phase is not
// "startup" is a finding, and so is a second call of a once-per-process routine, unless the
// scenario's `expect.discovery` (or `lockstep exec --expect-discovery`) allows that call that
// many times. The finding names each rank and every call too many, with its step, phase and
// where it came from. It needs no scenario: any trace with discovery records can be judged.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class DiscoveryCountChecker : public Checker {
 public:
  std::string_view name() const override { return "discovery_count"; }
  bool reads_tensors() const override { return false; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
