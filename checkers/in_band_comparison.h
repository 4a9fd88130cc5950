// In-band comparison (`lockstep run --compare in-band`, or `--fail-fast`): when the ranks' step
// digests differ, every rank learns every rank's per-tensor (digest, norm) table of that step and
// judges it here, with the replica checkers themselves (replica_weights, synced_grads,
// optimizer_state, buffers) run on one-step traces built from the tables. There is no second
// comparison: the in-band finding is what the post-run analysis finds on traces that end at the
// divergent step, which is where --fail-fast ends them.
//
// The finding travels in rank 0's trace as a `log` record (InBandFindingLine), and the runner
// holds it against the post-run findings (InBandDisagreement): post-run is the judge of record,
// and the two disagreeing is a harness error, never a second verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/result/finding.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// The checkers whose findings the in-band comparison reproduces: those that compare replicated
// tensors across ranks (checkers/replica_comparison.h), in the registry's order.
const std::vector<std::string>& InBandCheckers();

// `by_rank[r]`: rank r's record of one step (replicated tensors are enough). The findings every
// checker of InBandCheckers() gives on the traces that hold only these records.
std::vector<Finding> JudgeStepInBand(const Scenario& scenario, const std::vector<StepRecord>& by_rank);

// The `log` record's line that carries one in-band finding ("in-band finding: {json}"), and back.
// A line that is not one (any other log line) is nullopt.
std::string InBandFindingLine(const Finding& finding);
std::optional<Finding> ParseInBandFindingLine(const std::string& line);

// The in-band findings a rank wrote to its trace (its log tail), in order.
std::vector<Finding> InBandFindings(const RankTrace& trace);

// "" when every in-band finding of a checker that ran post-run (`ran`) equals that checker's
// post-run finding (checker, step, tensors, ranks, message) and every post-run finding of such a
// checker at the in-band step was found in-band too; otherwise a message naming both sides.
// A checker that did not run post-run is not held against anything.
std::string InBandDisagreement(const std::vector<Finding>& in_band, const std::vector<Finding>& post_run,
                               const std::vector<std::string>& ran);

}  // namespace lockstep
