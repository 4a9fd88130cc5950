#include "harness/result/scenario_series.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace lockstep {
namespace {

std::string TensorLabel(const TensorRecord& t) {
  return t.kind == TensorKind::kGrad ? t.name + " (grad)" : t.name;
}

}  // namespace

SeriesBuilder::SeriesBuilder(std::vector<int> ranks, size_t max_divergent_cells)
    : ranks_(std::move(ranks)), max_divergent_cells_(max_divergent_cells) {}

void SeriesBuilder::OnStep(int64_t step, const std::vector<const StepRecord*>& records) {
  // y axis in model order: the order in which tensors first appear, lowest rank and step first.
  for (auto& d : digests_) d.clear();
  for (size_t r = 0; r < records.size() && r < ranks_.size(); ++r) {
    const StepRecord* record = records[r];
    if (record == nullptr) continue;
    for (const TensorRecord& t : record->tensors) {
      if (!t.replicated) continue;
      std::string label = TensorLabel(t);
      auto [it, inserted] = label_index_.emplace(label, series_.tensors.size());
      if (inserted) {
        series_.tensors.push_back(std::move(label));
        digests_.emplace_back();
      }
      digests_[it->second].emplace_back(ranks_[r], t.digest);
    }
  }
  for (size_t label = 0; label < digests_.size(); ++label) {
    // Groups in order of their lowest rank, so rank 0's group comes first.
    std::vector<std::pair<std::vector<int>, Digest128>> groups;
    for (const auto& [rank, digest] : digests_[label]) {
      // A structured binding cannot be captured in C++17 (clang refuses it): capture a copy.
      auto g = std::find_if(groups.begin(), groups.end(), [d = digest](const auto& e) { return e.second == d; });
      if (g == groups.end()) {
        groups.push_back({{rank}, digest});
      } else {
        g->first.push_back(rank);
      }
    }
    if (groups.size() < 2) continue;
    if (series_.divergent_cells.size() >= max_divergent_cells_) {
      ++series_.divergent_cells_omitted;
      continue;
    }
    DivergenceCell cell;
    cell.step = step;
    cell.tensor = series_.tensors[label];
    for (auto& [group_ranks, digest] : groups) cell.groups.emplace_back(std::move(group_ranks), digest.ToHex());
    series_.divergent_cells.push_back(std::move(cell));
  }
}

ScenarioSeries SeriesBuilder::Finish(const std::vector<RankTrace>& traces) {
  ScenarioSeries series = std::move(series_);
  std::vector<const RankTrace*> ranks;
  for (const RankTrace& t : traces) ranks.push_back(&t);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankTrace* a, const RankTrace* b) { return a->header.rank < b->header.rank; });

  // x axis: every step any rank recorded. A rank that died early has NaN after its last step.
  std::map<int64_t, size_t> step_index;
  for (const RankTrace* t : ranks) {
    for (const StepRecord& s : t->steps) step_index.emplace(s.step, 0);
  }
  for (auto& [step, index] : step_index) {
    index = series.steps.size();
    series.steps.push_back(step);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> losses(series.steps.size(), std::numeric_limits<double>::quiet_NaN());
    // The last record of a step wins, should a step appear twice.
    for (const StepRecord& s : ranks[r]->steps) losses[step_index.at(s.step)] = s.loss;
    series.loss_by_rank[ranks[r]->header.rank] = std::move(losses);
  }

  for (const RankTrace* t : ranks) {
    const auto& all = t->collectives;
    const size_t first = all.size() > kLastCollectivesPerRank ? all.size() - kLastCollectivesPerRank : 0;
    for (size_t i = first; i < all.size(); ++i) {
      const CollectiveRecord& c = all[i];
      CollectiveSummary summary;
      summary.rank = t->header.rank;
      summary.group = c.group;
      summary.seq = c.seq;
      summary.op = c.op;
      summary.step = c.step;
      summary.start_s = c.start_s;
      summary.end_s = c.end_s;
      series.last_collectives.push_back(std::move(summary));
    }
  }
  return series;
}

ScenarioSeries BuildSeries(const std::vector<RankTrace>& traces, size_t max_divergent_cells) {
  std::vector<const RankTrace*> ranks;
  for (const RankTrace& t : traces) ranks.push_back(&t);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankTrace* a, const RankTrace* b) { return a->header.rank < b->header.rank; });
  std::vector<int> ids;
  for (const RankTrace* t : ranks) ids.push_back(t->header.rank);
  SeriesBuilder builder(std::move(ids), max_divergent_cells);
  ForEachStepAcrossRanks(ranks, [&builder](int64_t step, const std::vector<const StepRecord*>& records) {
    builder.OnStep(step, records);
  });
  return builder.Finish(traces);
}

}  // namespace lockstep
