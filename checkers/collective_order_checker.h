// collective_order: in every group, all ranks issue the same sequence of collectives (op, dtype,
// count, root, reduce), as c10d's ProcessGroupWrapper checks before each call. A difference is
// the moment a job starts to hang or to reduce garbage; the finding names the group, the first
// differing seq, its step, the odd ranks and the field-by-field difference.
//
// Group members are the ranks that recorded the group ("world": every rank with a trace). A rank
// whose sequence simply stops is compared only if it exited cleanly (its trace has a footer that
// reports no error) or finished the step of the collective it lacks; a rank that died, hung, was
// stopped by the launcher or stopped on an error (the communication error that echoes a peer's
// crash) is the crash and hang checkers' case, not an order problem.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class CollectiveOrderChecker : public Checker {
 public:
  std::string_view name() const override { return "collective_order"; }
  bool reads_tensors() const override { return false; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
