// teardown: every rank that died (a non-zero exit code or a signal, as the launcher saw it) after
// its last step's record and its clean-exit footer: its training finished and its records are
// whole, and the process failed on its way out (an exit handler, process-group destruction, the
// interpreter's finalization: a backend's worker thread meeting a finalizing interpreter aborts
// after a clean run). A failure still, so that CI sees it, but its own checker, apart from `crash`
// (which says training failed), and one a scenario's `checks:` can leave out. The finding says
// whether training completed on every rank: every trace with its footer, or the ranks whose
// records stop early (the launcher stopped them when this rank died).
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class TeardownChecker : public Checker {
 public:
  std::string_view name() const override { return "teardown"; }
  bool reads_tensors() const override { return false; }
  bool needs_launch() const override { return true; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
