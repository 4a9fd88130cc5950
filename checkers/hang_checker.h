// hang: when the launcher ended the scenario as a hang (LaunchReport::ending == kHang), name the
// rank(s) that never reached the collective the others wait in. From the traces: ranks with a
// collective begun and never ended wait in (group, seq S); a member of that group whose last
// begun seq there is below S, and that is not itself waiting in another collective, is the hung
// rank. Sub-group members are known only from their records, so when no member is found behind,
// the ranks that are in no collective and did not exit cleanly are named. The finding's step is
// the step of the collective the others wait in.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class HangChecker : public Checker {
 public:
  std::string_view name() const override { return "hang"; }
  bool reads_tensors() const override { return false; }
  bool needs_launch() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
