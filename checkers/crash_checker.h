// crash: every rank that died (non-zero exit code or a signal, as the launcher saw it), with the
// code or signal and the step it died in. The step is the one after its last recorded step (the
// step in flight), or its last step when it had finished them all. Ranks the launcher itself
// stopped (hang, timeout, interrupt, or RankExit::killed_by_launcher after another rank's crash)
// and survivors whose collective failed because a peer died (RankExit::failed_after_peer)
// are not crashes. Nor is a rank that died after its clean-exit footer, its training finished:
// `teardown` names it (checkers/teardown_checker.h).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class CrashChecker : public Checker {
 public:
  std::string_view name() const override { return "crash"; }
  bool reads_tensors() const override { return false; }
  bool needs_launch() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
