// The plot data of one scenario (loss curves, divergence map, last collectives), computed once
// from the per-rank traces after the run and stored in report.json, so reporters never read traces.
#pragma once

#include <cstddef>
#include <vector>

#include "harness/result/run_result.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// A model with thousands of tensors that diverge at every step after the onset would otherwise
// put millions of cells into report.json; the earliest cells are the ones that localize a bug.
inline constexpr size_t kMaxDivergentCells = 2000;
// The hang timeline shows where each rank stopped; a few collectives per rank tell the story.
inline constexpr size_t kLastCollectivesPerRank = 8;

// Tensor labels: a parameter, buffer or optimizer-state tensor is named as in the trace
// ("fc.weight", "bn.running_mean", "fc.weight#exp_avg"); a gradient gets a suffix
// ("fc.weight (grad)") because it shares its parameter's name. Sharded (non-replicated) tensors
// are not compared and not listed.
ScenarioSeries BuildSeries(const std::vector<RankTrace>& traces,
                           size_t max_divergent_cells = kMaxDivergentCells);

}  // namespace lockstep
