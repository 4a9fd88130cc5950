// startup: the ranks that had not started (no step-0 record: process start, communicator, model,
// initial broadcast) when the launcher gave up on them after startup_timeout_s. Only when the
// launch ended that way (LaunchEnding::kStartupTimeout); its finding names those ranks.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class StartupChecker : public Checker {
 public:
  std::string_view name() const override { return "startup"; }
  bool reads_tensors() const override { return false; }
  bool needs_launch() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
