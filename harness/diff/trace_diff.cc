#include "harness/diff/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace lockstep {
namespace {

using TensorKey = std::pair<TensorKind, std::string>;

std::map<TensorKey, const TensorRecord*> TensorsByKey(const StepRecord& step) {
  std::map<TensorKey, const TensorRecord*> tensors;
  for (const TensorRecord& t : step.tensors) tensors.emplace(TensorKey{t.kind, t.name}, &t);
  return tensors;
}

std::string Mismatch(const TensorRecord& a, const TensorRecord& b) {
  if (a.dtype != b.dtype) return "dtype " + a.dtype + " vs " + b.dtype;
  if (a.numel != b.numel) return "numel " + std::to_string(a.numel) + " vs " + std::to_string(b.numel);
  if (a.digest != b.digest) return "digest";
  return "";
}

std::string TraceState(const RankTrace& t) {
  if (t.missing) return "missing";
  if (t.truncated) return "truncated (" + t.truncation_note + ")";
  if (!t.footer) return "without a footer (the rank did not exit cleanly)";
  return "";
}

struct Comparison {
  StepDifference diff;
  int64_t records = 0;
  bool compared = false;  // at least one rank had the step in both runs
  bool Differs() const { return !diff.gaps.empty() || !diff.losses.empty() || !diff.tensors.empty(); }
};

}  // namespace

double RelativeDifference(double a, double b) {
  if (SameValue(a, b)) return 0.0;
  if (!std::isfinite(a) || !std::isfinite(b)) return std::nan("");
  return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b));
}

bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::vector<int> TensorDifference::Ranks() const {
  std::vector<int> ranks;
  for (const TensorRankDifference& d : per_rank) ranks.push_back(d.rank);
  return ranks;
}

ScenarioDiff DiffTraces(const std::string& id, const std::vector<RankTrace>& a, const std::vector<RankTrace>& b,
                        const DiffOptions& options) {
  ScenarioDiff result;
  result.id = id;
  result.ranks_a = static_cast<int>(a.size());
  result.ranks_b = static_cast<int>(b.size());
  const int ranks = std::min(result.ranks_a, result.ranks_b);
  if (result.ranks_a != result.ranks_b) {
    result.notes.push_back("world size differs: " + std::to_string(result.ranks_a) + " ranks in A, " +
                           std::to_string(result.ranks_b) + " in B; ranks 0.." + std::to_string(ranks - 1) +
                           " compared");
  }
  for (int r = 0; r < ranks; ++r) {
    for (const auto& [run, trace] : {std::pair{"A", &a[r]}, std::pair{"B", &b[r]}}) {
      const std::string state = TraceState(*trace);
      if (!state.empty()) result.notes.push_back(std::string(run) + " rank " + std::to_string(r) + ": trace " + state);
    }
  }

  std::vector<std::map<int64_t, const StepRecord*>> steps_a, steps_b;
  std::set<int64_t> all_steps;
  for (int r = 0; r < ranks; ++r) {
    steps_a.push_back(StepsByNumber(a[r]));
    steps_b.push_back(StepsByNumber(b[r]));
    for (const auto& [s, record] : steps_a.back()) all_steps.insert(s);
    for (const auto& [s, record] : steps_b.back()) all_steps.insert(s);
  }
  auto last_step = [](const std::map<int64_t, const StepRecord*>& steps) -> std::optional<int64_t> {
    if (steps.empty()) return std::nullopt;
    return steps.rbegin()->first;
  };

  for (int64_t step : all_steps) {
    Comparison c;
    c.diff.step = step;
    // Tensor rows in the order the ranks recorded them (rank 0 of A first), whatever the kind.
    std::map<TensorKey, size_t> position;
    std::map<TensorKey, TensorDifference> by_key;
    for (int r = 0; r < ranks; ++r) {
      auto ia = steps_a[r].find(step);
      auto ib = steps_b[r].find(step);
      const bool in_a = ia != steps_a[r].end(), in_b = ib != steps_b[r].end();
      if (!in_a && !in_b) continue;
      if (in_a != in_b) {
        const RankTrace& without = in_a ? b[r] : a[r];
        if (!options.gaps_of_unfinished_ranks && !without.footer) continue;
        c.diff.gaps.push_back({r, !in_a, last_step(in_a ? steps_b[r] : steps_a[r])});
        continue;
      }
      c.compared = true;
      const StepRecord& sa = *ia->second;
      const StepRecord& sb = *ib->second;
      if (!SameValue(sa.loss, sb.loss)) {
        c.diff.losses.push_back({r, sa.loss, sb.loss, std::fabs(sa.loss - sb.loss), RelativeDifference(sa.loss, sb.loss)});
      }
      const auto ta = TensorsByKey(sa), tb = TensorsByKey(sb);
      auto add = [&](const TensorKey& key, TensorRankDifference d) {
        TensorDifference& diff = by_key[key];
        diff.kind = key.first;
        diff.name = key.second;
        diff.per_rank.push_back(std::move(d));
      };
      for (const StepRecord* record : {&sa, &sb}) {
        for (const TensorRecord& t : record->tensors) position.try_emplace(TensorKey{t.kind, t.name}, position.size());
      }
      for (const TensorRecord& t : sa.tensors) {
        const TensorKey key{t.kind, t.name};
        auto other = tb.find(key);
        if (other == tb.end()) {
          add(key, {r, t, std::nullopt, std::nan(""), "only in A"});
          continue;
        }
        ++c.records;
        const std::string what = Mismatch(t, *other->second);
        if (!what.empty()) add(key, {r, t, *other->second, RelativeDifference(t.norm, other->second->norm), what});
      }
      for (const TensorRecord& t : sb.tensors) {
        const TensorKey key{t.kind, t.name};
        if (ta.count(key) == 0) add(key, {r, std::nullopt, t, std::nan(""), "only in B"});
      }
    }
    for (auto& [key, diff] : by_key) c.diff.tensors.push_back(std::move(diff));
    std::sort(c.diff.tensors.begin(), c.diff.tensors.end(), [&position](const auto& x, const auto& y) {
      return position.at({x.kind, x.name}) < position.at({y.kind, y.name});
    });

    if (c.compared) ++result.steps_compared;
    result.records_compared += c.records;
    if (c.Differs()) {
      ++result.differing_steps;
      if (!c.compared) ++result.steps_in_one_run;
      result.last_differing_step = step;
      if (!result.first) result.first = std::move(c.diff);
    }
  }
  return result;
}

}  // namespace lockstep
