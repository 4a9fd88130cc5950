#include "checkers/determinism_checker.h"

#include <map>
#include <set>

#include "checkers/internal/check_util.h"
#include "harness/diff/trace_diff.h"

namespace lockstep {
namespace {

using internal::FormatExact;

std::string TensorWords(const TensorDifference& t, const TensorRankDifference& d) {
  const std::string label = std::string(ToString(t.kind)) + " " + t.name;
  if (!d.b) return label + " missing in the repeat";
  if (!d.a) return label + " only in the repeat";
  if (d.what == "digest") return label + " digest " + d.a->digest.ToHex() + " vs " + d.b->digest.ToHex();
  return label + " " + d.what;
}

}  // namespace

// The comparison itself is `lockstep diff`'s (DiffTraces): run A is the run, run B the repeat.
std::vector<Finding> DeterminismChecker::Check(const CheckContext& context) const {
  Finding f;
  f.checker = std::string(name());
  if (!context.repeat) {
    f.outcome = FindingOutcome::kError;
    f.message = "no repeat run to compare with";
    return {f};
  }
  const std::vector<RankTrace>& run = context.traces;
  const std::vector<RankTrace>& repeat = *context.repeat;
  if (run.size() != repeat.size()) {
    f.outcome = FindingOutcome::kError;
    f.message = "the repeat run has " + std::to_string(repeat.size()) + " ranks, the run " + std::to_string(run.size());
    return {f};
  }
  DiffOptions options;
  options.gaps_of_unfinished_ranks = false;
  const ScenarioDiff diff = DiffTraces(context.scenario.name, run, repeat, options);
  if (!diff.first) return {};

  const StepDifference& first = *diff.first;
  std::map<int, std::vector<std::string>> by_rank;  // what differs on each rank, in words
  for (const StepGap& gap : first.gaps) {
    by_rank[gap.rank].push_back(gap.missing_in_a ? "step only in the repeat" : "step only in the first run");
  }
  for (const LossDifference& loss : first.losses) {
    by_rank[loss.rank].push_back("loss " + FormatExact(loss.a) + " vs " + FormatExact(loss.b));
  }
  std::set<std::string> tensors;
  for (const TensorDifference& t : first.tensors) {
    if (tensors.insert(t.name).second) f.tensors.push_back(t.name);
    for (const TensorRankDifference& d : t.per_rank) by_rank[d.rank].push_back(TensorWords(t, d));
  }
  if (!f.tensors.empty()) f.tensor = f.tensors.front();

  f.step = first.step;
  std::vector<std::string> parts;
  for (const auto& [rank, words] : by_rank) {
    f.ranks.push_back(rank);
    parts.push_back("rank " + std::to_string(rank) + ": " + internal::JoinCapped(words, 3));
  }
  f.message = "the repeat run differs from the first at step " + std::to_string(first.step) + ": " +
              internal::JoinCapped(parts, 4);
  const int64_t later = diff.differing_steps - 1;
  if (later > 0) {
    f.message += "; " + std::to_string(later) + " later step" + (later == 1 ? "" : "s") + " differ too";
    f.details["later_steps"] = std::to_string(later);
  }
  return {f};
}

}  // namespace lockstep
