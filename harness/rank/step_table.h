// The table a rank sends in-band when the step digests differ (--compare in-band): one row per
// replicated tensor of the step, in the order the trainer visits them, four int64 each:
// digest high, digest low, the norm's bits, and a key of "<kind>:<name>". The names themselves
// never travel: every rank builds the same model and visits it in the same order, and the key
// checks that claim instead of trusting it.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

inline constexpr int64_t kStepTableColumns = 4;

// The replicated tensors of `record`, packed (rows() * kStepTableColumns values).
std::vector<int64_t> PackStepTable(const StepRecord& record);

// The replicated tensors of `record`, in PackStepTable's order.
int64_t StepTableRows(const StepRecord& record);

// `all` holds `world` tables of StepTableRows(mine) rows each, rank 0's first. Each rank's step,
// its replicated tensors named after `mine`'s. An Internal error naming the rank and the row
// where a key differs: the ranks' tensor lists are not the same, and no comparison by position
// would mean anything.
Result<std::vector<StepRecord>> UnpackStepTables(const StepRecord& mine, const std::vector<int64_t>& all, int world);

}  // namespace lockstep
