// discovery_count: each process ran topology/device discovery exactly
// scenario.expected_discovery_calls times (the PyTorch/XLA multi-slice bug: tracing flash
// attention ran discovery a second time). The finding names each rank, its count and the phase
// and step of every extra call.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class DiscoveryCountChecker : public Checker {
 public:
  std::string_view name() const override { return "discovery_count"; }
  std::string_view needs_scenario() const override {
    return "lockstep-rank's discovery records and the scenario's expected_discovery_calls";
  }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
