// Why the ranks' collectives went apart, read off their sequences around the first difference
// and never guessed beyond them. A collective_order finding says *what* differs (group, seq, the
// two signatures); a cause says which known bug the sequences point to, e.g. "rank 0 issued 2
// collectives the others did not (barrier(), all_reduce(float32, 1, sum)) at step 3, then went on
// with them: a collective called on some ranks only". Each cause is one rule over the facts of
// the difference (CollectiveMismatchFacts) that gives its line, or nothing when the sequences do
// not support it; the finding carries the first that holds (Finding::cause,
// docs/CHECKERS.md#causes). The same shape as divergence_cause.h, over collectives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep {

// "all_reduce(float32, 1024, avg)", "broadcast(float32, 2048, root 0)", "barrier()"
std::string CollectiveSignature(const CollectiveRecord& c);
// The fields every member of a collective must pass alike (op, dtype, count, root, reduce); the
// count not where both recorded split sizes (an all_to_all's: collective_args pairs those).
bool SameCollective(const CollectiveRecord& a, const CollectiveRecord& b);

// One side of the difference: the ranks that agree, and one of them's collectives in the group
// from the differing seq on (the first may be absent: the side issued no more).
struct CollectiveSide {
  std::vector<int> ranks;
  std::vector<const CollectiveRecord*> from_seq;  // at most kCollectivesLookedAt, in seq order
  bool exited = false;                            // the side's trace has its clean-exit footer
  std::optional<int64_t> last_step;               // the last step the side recorded
};

// What the sequences say around the first seq at which the ranks of a group differ: the
// majority (or the lowest rank's side) and the first other side.
struct CollectiveMismatchFacts {
  std::string group;
  uint64_t seq = 0;
  CollectiveSide reference;
  CollectiveSide odd;
};

// How far past the difference the rules look for the sequences to meet again.
inline constexpr size_t kCollectivesLookedAt = 8;

struct CollectiveMismatchCause {
  std::string_view name;
  std::optional<std::string> (*explain)(const CollectiveMismatchFacts& facts);
};

// Every cause, in the order they are tried: the first that holds is the finding's.
const std::vector<CollectiveMismatchCause>& CollectiveMismatchCauses();

// The line of the first cause that holds, or nothing.
std::optional<std::string> ExplainCollectiveMismatch(const CollectiveMismatchFacts& facts);

}  // namespace lockstep
