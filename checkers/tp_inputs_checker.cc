#include "checkers/tp_inputs_checker.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/internal/first_step_finding.h"

namespace lockstep {
namespace {

using internal::JoinCapped;
using internal::JoinClauses;
using internal::RankPhrase;

// How many differing inputs one finding's message spells out; the rest are counted.
constexpr size_t kInputsShown = 3;

// "up" for a module's first positional input, "up#mask" / "up#1" for another: how a finding
// names the input, as an optimizer state is named after its parameter.
std::string InputName(const TpInputRecord& in) {
  return in.input.empty() || in.input == "0" ? in.module : in.module + "#" + in.input;
}

// "input 0 of 'layers.0.up'", "input 'mask' of 'attn'".
std::string DescribeInput(const TpInputRecord& in) {
  const bool positional = !in.input.empty() && std::all_of(in.input.begin(), in.input.end(),
                                                           [](char c) { return c >= '0' && c <= '9'; });
  return (positional ? "input " + in.input : "input '" + in.input + "'") + " of '" + in.module + "'";
}

// What one rank recorded, as compared: the digest and how many forwards it covers.
using Seen = std::pair<Digest128, int64_t>;

// One module input that differs within one group at one step.
struct InputDifference {
  std::string name;        // InputName
  std::string text;        // "input 0 of 'up' in group {0, 1} on mesh dim tp: rank 1 ... where rank 0 ..."
  std::vector<int> named;  // the odd ranks, or every rank of the group without a majority
  bool majority = true;
};

std::string Has(const std::vector<int>& ranks, const Seen& seen) {
  return RankPhrase(ranks) + (ranks.size() == 1 ? " has " : " have ") + seen.first.ToHex().substr(0, 12) +
         " over " + std::to_string(seen.second) + " forward" + (seen.second == 1 ? "" : "s");
}

// The differences among the ranks of one step: each (module, input, group) judged alone, among
// the group's members that recorded it.
std::vector<InputDifference> DifferencesAt(const std::vector<const StepRecord*>& records) {
  // (module, input, group ranks) -> the group, and (rank, what it saw), in rank order.
  using Key = std::tuple<std::string, std::string, std::vector<int>>;
  std::vector<Key> order;
  std::map<Key, std::pair<const TpInputRecord*, std::vector<std::pair<int, Seen>>>> held;
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r] == nullptr) continue;
    for (const TpInputRecord& in : records[r]->tp_inputs) {
      // A rank outside the group it names would be the probe's error; it is no member to compare.
      if (!std::binary_search(in.group.ranks.begin(), in.group.ranks.end(), static_cast<int>(r))) continue;
      Key key{in.module, in.input, in.group.ranks};
      auto [it, fresh] = held.try_emplace(key);
      if (fresh) {
        order.push_back(key);
        it->second.first = &in;
      }
      it->second.second.emplace_back(static_cast<int>(r), Seen{in.digest, in.forwards});
    }
  }
  std::vector<InputDifference> out;
  for (const Key& key : order) {
    const auto& [in, seen] = held.at(key);
    if (seen.size() < 2) continue;  // recorded by one member only: nothing to hold it against
    std::vector<std::pair<Seen, std::vector<int>>> by_value;
    for (const auto& [rank, s] : seen) {
      auto it = std::find_if(by_value.begin(), by_value.end(), [&](const auto& g) { return g.first == s; });
      if (it == by_value.end()) by_value.push_back({s, {rank}});
      else it->second.push_back(rank);
    }
    if (by_value.size() < 2) continue;
    std::stable_sort(by_value.begin(), by_value.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    InputDifference d;
    d.name = InputName(*in);
    d.majority = by_value.front().second.size() * 2 > seen.size();
    const std::string where = DescribeInput(*in) + " in group " + DescribeReplicaGroup(in->group);
    std::vector<std::string> parts;
    if (d.majority) {
      for (size_t i = 1; i < by_value.size(); ++i) {
        parts.push_back(Has(by_value[i].second, by_value[i].first));
        d.named.insert(d.named.end(), by_value[i].second.begin(), by_value[i].second.end());
      }
      d.text = where + ": " + JoinCapped(parts, parts.size()) + " where " +
               Has(by_value.front().second, by_value.front().first);
    } else {
      for (const auto& [s, ranks] : by_value) {
        parts.push_back(Has(ranks, s));
        d.named.insert(d.named.end(), ranks.begin(), ranks.end());
      }
      d.text = where + ": " + JoinCapped(parts, parts.size()) + " (no majority among " + std::to_string(seen.size()) +
               " ranks: the records cannot tell which is wrong, so every rank that disagrees is named)";
    }
    out.push_back(std::move(d));
  }
  return out;
}

class TpInputsJudge : public StepJudge {
 public:
  explicit TpInputsJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    std::vector<InputDifference> diffs = DifferencesAt(records);
    if (diffs.empty()) return;
    Finding* first = finding_.FirstAt(checker_, step);
    if (first == nullptr) return;
    Finding& f = *first;
    std::set<int> named;
    std::vector<std::string> texts;
    for (const InputDifference& d : diffs) {
      named.insert(d.named.begin(), d.named.end());
      texts.push_back(d.text);
      if (std::find(f.tensors.begin(), f.tensors.end(), d.name) == f.tensors.end()) f.tensors.push_back(d.name);
    }
    f.tensor = diffs.front().name;
    f.ranks.assign(named.begin(), named.end());
    f.message = "replicated inputs of tensor-parallel modules differ across their group at step " +
                std::to_string(step) + ": " + JoinClauses(texts, kInputsShown) +
                " (each rank's weight shard computes on a different input)";
    f.details["inputs"] = JoinCapped(f.tensors, f.tensors.size());
    if (std::any_of(diffs.begin(), diffs.end(), [](const InputDifference& d) { return !d.majority; })) {
      f.details["majority"] = "none";
    }
  }

  std::vector<Finding> Finish(const CheckContext& /*context*/) override { return finding_.Take(); }

 private:
  std::string checker_;
  internal::FirstStepFinding finding_;
};

}  // namespace

std::vector<Finding> TpInputsChecker::Check(const CheckContext& context) const {
  TpInputsJudge judge{std::string(name())};
  return JudgeInMemory(judge, name(), context);
}

std::unique_ptr<StepJudge> TpInputsChecker::StartJudge(const JudgeStart& /*start*/) const {
  return std::make_unique<TpInputsJudge>(std::string(name()));
}

}  // namespace lockstep
