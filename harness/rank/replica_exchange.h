// The rank's side of the in-band comparison (--compare in-band, --fail-fast), after each step's
// record: all-gather one 16-byte step digest per rank over the world, and only when they differ
// the per-tensor tables (harness/rank/step_table.h), judged by the replica checkers
// (checkers/in_band_comparison.h). Every rank makes the same calls in the same order, since every
// rank sees the same gathered digests: a mismatch never leaves one rank waiting in a collective.
//
// One digest over the world is the right grouping in every mode the reference trainer has: a
// tensor it marks replicated must agree on all ranks (DDP: parameters, buffers, the all-reduced
// gradients and the optimizer state; ZeRO-1: the parameters re-gathered after the update and the
// buffers; with slices, the hierarchical all-reduce and the in-slice all-gather still leave one
// value world-wide). ZeRO-1's gradient and optimizer-state shards are replicated=false: with
// slices they agree across each cross<i> group too, but no post-run checker compares them, and
// the in-band finding must be the post-run one (docs/CHECKERS.md#in-band-comparison).
#pragma once

#include <torch/types.h>

#include <vector>

#include "harness/comm/communicator.h"
#include "harness/core/status.h"
#include "harness/result/finding.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Empty when every rank's step digest equals rank 0's; otherwise the replica checkers' findings
// on every rank's tables of this step (the same on every rank). An Internal error when the ranks'
// tables cannot be compared (other tensor counts or names), or differ nowhere although the step
// digests do. Collectives go over `world` on `device` (nccl moves nothing else).
Result<std::vector<Finding>> CompareStepInBand(Communicator& world, const torch::Device& device,
                                               const Scenario& scenario, const StepRecord& record);

}  // namespace lockstep
