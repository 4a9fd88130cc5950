#include "checkers/forward_passes_checker.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/internal/first_step_finding.h"
#include "checkers/internal/replica_units.h"

namespace lockstep {
namespace {

using internal::JoinCapped;
using internal::JoinClauses;
using internal::RankPhrase;

// How many units one finding's message spells out; the rest are counted.
constexpr size_t kUnitsShown = 4;

// One unit whose ranks ran different numbers of forward passes in a step.
struct CountDifference {
  std::string text;        // "rank 2 ran 2 where ranks 0,1 ran 1"
  std::vector<int> named;  // the odd ranks, or every rank where there is no majority
  bool majority = true;
};

std::string Ran(const std::vector<int>& ranks, int64_t count) {
  return RankPhrase(ranks) + " ran " + std::to_string(count);
}

std::optional<CountDifference> Compare(const internal::ReplicaUnit& unit, const std::vector<const StepRecord*>& records) {
  // Each count with its ranks, in order of the lowest rank that ran it.
  std::vector<std::pair<int64_t, std::vector<int>>> by_count;
  size_t counted = 0;
  for (int r : unit.ranks) {
    const std::optional<int64_t>& forwards = records[static_cast<size_t>(r)]->forwards;
    if (!forwards) continue;  // not counted (another writer): nothing to hold against the others
    ++counted;
    auto it = std::find_if(by_count.begin(), by_count.end(), [&](const auto& c) { return c.first == *forwards; });
    if (it == by_count.end()) by_count.push_back({*forwards, {r}});
    else it->second.push_back(r);
  }
  if (by_count.size() < 2) return std::nullopt;
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  CountDifference d;
  d.majority = by_count.front().second.size() * 2 > counted;
  std::vector<std::string> parts;
  for (size_t i = d.majority ? 1 : 0; i < by_count.size(); ++i) {
    parts.push_back(Ran(by_count[i].second, by_count[i].first));
    d.named.insert(d.named.end(), by_count[i].second.begin(), by_count[i].second.end());
  }
  if (d.majority) {
    d.text = JoinCapped(parts, parts.size()) + " where " + Ran(by_count.front().second, by_count.front().first) +
             unit.label;
  } else {
    d.text = JoinCapped(parts, parts.size()) + unit.label + " (no majority among " + std::to_string(counted) +
             " ranks: the records cannot tell which is wrong, so every rank is named)";
  }
  return d;
}

class ForwardPassesJudge : public StepJudge {
 public:
  explicit ForwardPassesJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    size_t counted = 0;
    for (const StepRecord* s : records) counted += (s != nullptr && s->forwards) ? 1 : 0;
    if (counted < 2) return;
    std::vector<CountDifference> diffs;
    for (const internal::ReplicaUnit& unit : internal::ReplicaUnitsOf(records)) {
      if (auto d = Compare(unit, records)) diffs.push_back(std::move(*d));
    }
    if (diffs.empty()) return;
    Finding* first = finding_.FirstAt(checker_, step);
    if (first == nullptr) return;
    Finding& f = *first;
    std::set<int> named;
    std::vector<std::string> texts;
    for (const CountDifference& d : diffs) {
      named.insert(d.named.begin(), d.named.end());
      texts.push_back(d.text);
    }
    f.ranks.assign(named.begin(), named.end());
    f.message = "replicas ran different numbers of training forward passes in step " + std::to_string(step) + ": " +
                JoinClauses(texts, kUnitsShown);
    f.details["forwards"] = JoinClauses(texts, texts.size());
    if (std::any_of(diffs.begin(), diffs.end(), [](const CountDifference& d) { return !d.majority; })) {
      f.details["majority"] = "none";
    }
    f.cause = "a rank that runs more forward passes than its replicas before an optimizer step left a batch out "
              "of its step (a skip decided on its own values, such as a non-finite loss only it saw: no backward, "
              "no optimizer step), or ran fewer micro-batches: from here its steps pair with the other ranks' "
              "neighbouring ones, so their collectives still line up while each rank trains on other steps' "
              "gradients, until the run ends in a mismatch or a hang. Decide such a skip on a value every rank "
              "agrees on (all-reduce the flag)";
  }

  std::vector<Finding> Finish(const CheckContext& /*context*/) override { return finding_.Take(); }

 private:
  std::string checker_;
  internal::FirstStepFinding finding_;
};

}  // namespace

std::vector<Finding> ForwardPassesChecker::Check(const CheckContext& context) const {
  ForwardPassesJudge judge{std::string(name())};
  return JudgeInMemory(judge, name(), context);
}

std::unique_ptr<StepJudge> ForwardPassesChecker::StartJudge(const JudgeStart& /*start*/) const {
  return std::make_unique<ForwardPassesJudge>(std::string(name()));
}

}  // namespace lockstep
