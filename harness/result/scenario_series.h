// The plot data of one scenario (loss curves, divergence map, last collectives), computed once
// from the per-rank traces after the run and stored in report.json, so reporters never read traces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
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

// BuildSeries fed one step at a time, for traces that stream (checkers/streamed_traces.h): the
// tensor labels and the divergence map come from the steps' tensors as they pass, the rest
// (steps, losses, last collectives) from the folded traces at the end. BuildSeries is this,
// driven over traces in memory. Memory: the labels and the capped cells, never a step's tensors
// after OnStep.
class SeriesBuilder {
 public:
  // `ranks`: the header rank of each position of OnStep's records, in the order the series lists ranks.
  explicit SeriesBuilder(std::vector<int> ranks, size_t max_divergent_cells = kMaxDivergentCells);
  // Steps in increasing order; records[i]: the last record of `step` of ranks[i], or null.
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records);
  // `traces`: the same ranks, whole or folded (their steps' tensors are not read here).
  ScenarioSeries Finish(const std::vector<RankTrace>& traces);

 private:
  std::vector<int> ranks_;
  size_t max_divergent_cells_;
  ScenarioSeries series_;
  std::unordered_map<std::string, size_t> label_index_;
  std::vector<std::vector<std::pair<int, Digest128>>> digests_;  // per label, at the current step
};

}  // namespace lockstep
