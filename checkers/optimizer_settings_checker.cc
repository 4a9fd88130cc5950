#include "checkers/optimizer_settings_checker.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/internal/first_step_finding.h"
#include "checkers/internal/replica_units.h"

namespace lockstep {
namespace {

using internal::FormatExact;
using internal::JoinCapped;
using internal::JoinClauses;
using internal::RankPhrase;
using internal::SameDouble;

// The gradient norm clip_grad_norm_ returned (trace 2.4): no setting but the step's measure of its
// gradients, compared by its own rule (TotalNormDifferences).
constexpr const char* kClipTotalNorm = "clip.total_norm";

// How many differing settings one finding's message spells out; the rest are counted.
constexpr size_t kSettingsShown = 4;

using Unit = internal::ReplicaUnit;

// One setting that differs within one unit at one step.
struct SettingDifference {
  std::string setting;
  std::string text;        // "lr of optimizer 0, param group 0: rank 1 has 0.1 where ranks 0, 2 have 0.2"
  std::vector<int> named;  // the odd ranks, or every rank that disagrees without a majority
  bool majority = true;
};

// The held values of one setting compared: a difference, or none where they agree.
std::optional<SettingDifference> Compare(const std::string& setting, const std::string& label,
                                         const std::vector<std::pair<int, double>>& held) {
  if (held.size() < 2) return std::nullopt;  // recorded by one rank only: nothing to hold it against
  // Each value with its ranks, in order of the lowest rank holding it.
  std::vector<std::pair<double, std::vector<int>>> by_value;
  for (const auto& [rank, value] : held) {
    auto it = std::find_if(by_value.begin(), by_value.end(), [&](const auto& g) { return SameDouble(g.first, value); });
    if (it == by_value.end()) by_value.push_back({value, {rank}});
    else it->second.push_back(rank);
  }
  if (by_value.size() < 2) return std::nullopt;
  std::stable_sort(by_value.begin(), by_value.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  SettingDifference d;
  d.setting = setting;
  d.majority = by_value.front().second.size() * 2 > held.size();
  auto has = [](const std::vector<int>& ranks, double v) {
    return RankPhrase(ranks) + (ranks.size() == 1 ? " has " : " have ") + FormatExact(v);
  };
  std::vector<std::string> parts;
  if (d.majority) {
    for (size_t i = 1; i < by_value.size(); ++i) {
      parts.push_back(has(by_value[i].second, by_value[i].first));
      d.named.insert(d.named.end(), by_value[i].second.begin(), by_value[i].second.end());
    }
    d.text = DescribeOptimizerSetting(setting) + label + ": " + JoinCapped(parts, parts.size()) + " where " +
             has(by_value.front().second, by_value.front().first);
  } else {
    for (const auto& [value, ranks] : by_value) {
      parts.push_back(has(ranks, value));
      d.named.insert(d.named.end(), ranks.begin(), ranks.end());
    }
    d.text = DescribeOptimizerSetting(setting) + label + ": " + JoinCapped(parts, parts.size()) +
             " (no majority among " + std::to_string(held.size()) +
             " ranks: the records cannot tell which is wrong, so every rank that disagrees is named)";
  }
  return d;
}

// The names of the parameters a rank recorded at a step, sorted: which model (or which piece of
// it) the rank trains. Ranks with the same names hold replicas or shards of one model; a pipeline
// stage, or a rank with parameters of its own, names others.
std::string ParamNames(const StepRecord& s) {
  std::vector<std::string> names;
  for (const TensorRecord& t : s.tensors) {
    if (t.kind == TensorKind::kParam) names.push_back(t.name);
  }
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& n : names) joined += n + '\n';
  return joined;
}

// Whether the replicated gradients the ranks both hold (each within its replica group) agree.
// Where they do not, the clipped norms differ as their consequence, and synced_grads names the
// gradients themselves.
bool ReplicatedGradsAgree(const std::vector<int>& ranks, const std::vector<const StepRecord*>& records) {
  const StepRecord& first = *records[static_cast<size_t>(ranks.front())];
  std::unordered_map<std::string, const TensorRecord*> mine;
  for (const TensorRecord& t : first.tensors) {
    if (t.kind == TensorKind::kGrad && t.replicated) mine.emplace(t.name, &t);
  }
  for (size_t i = 1; i < ranks.size(); ++i) {
    const int r = ranks[i];
    for (const TensorRecord& t : records[static_cast<size_t>(r)]->tensors) {
      if (t.kind != TensorKind::kGrad || !t.replicated) continue;
      auto it = mine.find(t.name);
      if (it == mine.end()) continue;
      const auto& g = it->second->group;
      const bool together = g == nullptr || std::find(g->ranks.begin(), g->ranks.end(), r) != g->ranks.end();
      if (together && !(it->second->digest == t.digest)) return false;
    }
  }
  return true;
}

// The gradient norm clip_grad_norm_ returned, compared only among ranks that name the same
// parameters (one model, replicated or sharded: DDP's replicas compute it bit-identically from
// the same averaged gradients, FSDP's own clip_grad_norm_ all-reduces it) and whose replicated
// gradients agree. Exact: every rank computes the norm of the same gradients in the same order,
// or reads one all-reduced value, so no tolerance is needed and none would hide a shard's norm.
std::vector<SettingDifference> TotalNormDifferences(const Unit& unit, const std::vector<const StepRecord*>& records,
                                                    const std::vector<std::pair<int, double>>& held) {
  std::vector<std::pair<std::string, std::vector<std::pair<int, double>>>> by_model;
  for (const auto& rv : held) {
    std::string names = ParamNames(*records[static_cast<size_t>(rv.first)]);
    auto it = std::find_if(by_model.begin(), by_model.end(), [&](const auto& m) { return m.first == names; });
    if (it == by_model.end()) by_model.push_back({std::move(names), {rv}});
    else it->second.push_back(rv);
  }
  std::vector<SettingDifference> out;
  for (const auto& [names, values] : by_model) {
    if (names.empty() || values.size() < 2) continue;  // no parameter recorded: no model to say it is one
    std::vector<int> ranks;
    for (const auto& rv : values) ranks.push_back(rv.first);
    if (!ReplicatedGradsAgree(ranks, records)) continue;
    if (auto d = Compare(kClipTotalNorm, unit.label, values)) out.push_back(std::move(*d));
  }
  return out;
}

std::vector<SettingDifference> DifferencesIn(const Unit& unit, const std::vector<const StepRecord*>& records) {
  if (unit.ranks.size() < 2) return {};
  // setting -> (rank, value), in the order the lowest-numbered rank wrote them.
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<std::pair<int, double>>> values;
  for (int r : unit.ranks) {
    for (const auto& [setting, value] : records[static_cast<size_t>(r)]->optimizer) {
      auto [it, fresh] = values.try_emplace(setting);
      if (fresh) order.push_back(setting);
      it->second.emplace_back(r, value);
    }
  }
  std::vector<SettingDifference> out;
  for (const std::string& setting : order) {
    const auto& held = values.at(setting);
    if (setting == kClipTotalNorm) {
      for (SettingDifference& d : TotalNormDifferences(unit, records, held)) out.push_back(std::move(d));
    } else if (auto d = Compare(setting, unit.label, held)) {
      out.push_back(std::move(*d));
    }
  }
  return out;
}

class OptimizerSettingsJudge : public StepJudge {
 public:
  explicit OptimizerSettingsJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    bool any = false;
    for (const StepRecord* s : records) any = any || (s != nullptr && !s->optimizer.empty());
    if (!any) return;
    std::vector<SettingDifference> diffs;
    for (const Unit& unit : internal::ReplicaUnitsOf(records)) {
      for (SettingDifference& d : DifferencesIn(unit, records)) diffs.push_back(std::move(d));
    }
    if (diffs.empty()) return;
    Finding* first = finding_.FirstAt(checker_, step);
    if (first == nullptr) return;
    Finding& f = *first;
    std::set<int> named;
    std::vector<std::string> texts;
    std::vector<std::string> settings;
    for (const SettingDifference& d : diffs) {
      named.insert(d.named.begin(), d.named.end());
      texts.push_back(d.text);
      if (std::find(settings.begin(), settings.end(), d.setting) == settings.end()) settings.push_back(d.setting);
    }
    f.ranks.assign(named.begin(), named.end());
    const bool norms_only = std::all_of(diffs.begin(), diffs.end(),
                                        [](const SettingDifference& d) { return d.setting == kClipTotalNorm; });
    f.message = std::string(norms_only ? "the clipped gradient norm differs across the ranks of one model"
                                       : "optimizer settings differ across replicas") +
                " at step " + std::to_string(step) + ": " +
                JoinClauses(texts, kSettingsShown);
    f.details["setting"] = diffs.front().setting;
    f.details["settings"] = JoinCapped(settings, settings.size());
    if (std::any_of(diffs.begin(), diffs.end(), [](const SettingDifference& d) { return !d.majority; })) {
      f.details["majority"] = "none";
    }
    if (std::any_of(diffs.begin(), diffs.end(), [](const SettingDifference& d) { return d.setting == kClipTotalNorm; })) {
      f.cause = "the ranks of one model clipped their gradients by different norms: each computed the norm over "
                "its own gradients only (torch.nn.utils.clip_grad_norm_ over a sharded model's local shards, "
                "where FSDP's model.clip_grad_norm_ all-reduces it), so each scales its part of the update by "
                "another coefficient";
    }
  }

  std::vector<Finding> Finish(const CheckContext& /*context*/) override { return finding_.Take(); }

 private:
  std::string checker_;
  internal::FirstStepFinding finding_;
};

}  // namespace

std::string DescribeOptimizerSetting(const std::string& setting) {
  // "opt<i>.group<g>.<name>"
  int opt = 0;
  int group = 0;
  int used = 0;
  if (std::sscanf(setting.c_str(), "opt%d.group%d.%n", &opt, &group, &used) == 2 && used > 0 &&
      static_cast<size_t>(used) < setting.size()) {
    return setting.substr(static_cast<size_t>(used)) + " of optimizer " + std::to_string(opt) + ", param group " +
           std::to_string(group);
  }
  if (setting == kClipTotalNorm) return "the gradient norm clip_grad_norm_ returned";
  const std::string clip = "clip.";
  if (setting.compare(0, clip.size(), clip) == 0 && setting.size() > clip.size()) {
    return "clip_grad_norm_'s " + setting.substr(clip.size());
  }
  return setting;
}

std::vector<Finding> OptimizerSettingsChecker::Check(const CheckContext& context) const {
  OptimizerSettingsJudge judge{std::string(name())};
  return JudgeInMemory(judge, name(), context);
}

std::unique_ptr<StepJudge> OptimizerSettingsChecker::StartJudge(const JudgeStart& /*start*/) const {
  return std::make_unique<OptimizerSettingsJudge>(std::string(name()));
}

}  // namespace lockstep
