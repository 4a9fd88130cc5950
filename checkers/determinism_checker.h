// determinism (opt-in): a second run of the scenario (CheckContext::repeat) recorded bitwise the
// same losses, gradient norms and tensor digests on every rank at every step. The finding names
// the first step that differs, the ranks where it differs and the first differing tensor.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class DeterminismChecker : public Checker {
 public:
  std::string_view name() const override { return "determinism"; }
  std::string_view needs_scenario() const override { return "a repeat run of the scenario"; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
