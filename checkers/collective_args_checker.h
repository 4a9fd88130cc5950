// collective_args: the arguments of one collective that must fit together across its ranks
// without being equal: an all_to_all's split sizes. What group rank i sends to group rank j
// (`in_splits[j]` on i) must be what j expects from i (`out_splits[i]` on j); a rank that assumes
// its peers' counts instead of exchanging them makes the backend fail (gloo) or hang (NCCL), and
// the finding names the collective and the pairs that disagree from what each rank recorded at
// its begin, before that. Fields that must be equal on every rank (op, dtype, count, broadcast
// root, reduce op) are collective_order's, which names a rank that reduces with MAX where the
// others SUM; this checker does not repeat them.
//
// Read from the collective_begin records of trace 2.3 (`group_rank`, `in_splits`, `out_splits`,
// written by the probe's recording backend); a collective without them is not judged. One
// finding per group, at its first collective whose splits disagree, naming both ranks of every
// pair that disagrees: the records cannot tell the sender's count from the receiver's as the
// wrong one.
#pragma once

#include "checkers/checker.h"

namespace lockstep {

class CollectiveArgsChecker : public Checker {
 public:
  std::string_view name() const override { return "collective_args"; }
  bool reads_tensors() const override { return false; }
  std::vector<Finding> Check(const CheckContext& context) const override;
};

}  // namespace lockstep
