#include "harness/result/scenario_series.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

namespace lockstep {
namespace {

std::string TensorLabel(const TensorRecord& t) {
  return t.kind == TensorKind::kGrad ? t.name + " (grad)" : t.name;
}

}  // namespace

ScenarioSeries BuildSeries(const std::vector<RankTrace>& traces, size_t max_divergent_cells) {
  ScenarioSeries series;

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

  // Per rank: step index -> its record (the last one, should a step appear twice).
  std::vector<std::vector<const StepRecord*>> by_step(ranks.size(),
                                                      std::vector<const StepRecord*>(series.steps.size()));
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> losses(series.steps.size(), std::numeric_limits<double>::quiet_NaN());
    for (const StepRecord& s : ranks[r]->steps) {
      const size_t i = step_index.at(s.step);
      by_step[r][i] = &s;
      losses[i] = s.loss;
    }
    series.loss_by_rank[ranks[r]->header.rank] = std::move(losses);
  }

  // y axis in model order: the order in which tensors first appear, lowest rank and step first.
  std::unordered_map<std::string, size_t> label_index;
  std::vector<std::vector<std::pair<int, Digest128>>> digests;  // per label, at the current step
  for (size_t i = 0; i < series.steps.size(); ++i) {
    for (auto& d : digests) d.clear();
    for (size_t r = 0; r < ranks.size(); ++r) {
      const StepRecord* record = by_step[r][i];
      if (record == nullptr) continue;
      for (const TensorRecord& t : record->tensors) {
        if (!t.replicated) continue;
        std::string label = TensorLabel(t);
        auto [it, inserted] = label_index.emplace(label, series.tensors.size());
        if (inserted) {
          series.tensors.push_back(std::move(label));
          digests.emplace_back();
        }
        digests[it->second].emplace_back(ranks[r]->header.rank, t.digest);
      }
    }
    for (size_t label = 0; label < digests.size(); ++label) {
      // Groups in order of their lowest rank, so rank 0's group comes first.
      std::vector<std::pair<std::vector<int>, Digest128>> groups;
      for (const auto& [rank, digest] : digests[label]) {
        // A structured binding cannot be captured in C++17 (clang refuses it): capture a copy.
        auto g = std::find_if(groups.begin(), groups.end(), [d = digest](const auto& e) { return e.second == d; });
        if (g == groups.end()) {
          groups.push_back({{rank}, digest});
        } else {
          g->first.push_back(rank);
        }
      }
      if (groups.size() < 2) continue;
      if (series.divergent_cells.size() >= max_divergent_cells) {
        ++series.divergent_cells_omitted;
        continue;
      }
      DivergenceCell cell;
      cell.step = series.steps[i];
      cell.tensor = series.tensors[label];
      for (auto& [group_ranks, digest] : groups) cell.groups.emplace_back(std::move(group_ranks), digest.ToHex());
      series.divergent_cells.push_back(std::move(cell));
    }
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

}  // namespace lockstep
