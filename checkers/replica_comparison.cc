#include "checkers/replica_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <iterator>
#include <set>
#include <unordered_map>

#include "checkers/divergence_cause.h"
#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::FormatNumber;
using internal::JoinCapped;
using internal::JoinRanks;
using internal::RankPhrase;

constexpr size_t kMaxTensorsInFinding = 50;

// Relative difference of the group norms against the reference group; infinite when a norm is
// not finite, so that it is never called rounding-level.
double MaxRelNormDiff(const TensorDivergence& d) {
  const DigestGroup& ref = d.groups.front();
  if (!ref.digest) return std::numeric_limits<double>::quiet_NaN();
  double worst = 0.0;
  for (size_t g = 1; g < d.groups.size(); ++g) {
    const DigestGroup& other = d.groups[g];
    if (!other.digest) continue;
    if (!std::isfinite(other.norm) || !std::isfinite(ref.norm)) return std::numeric_limits<double>::infinity();
    const double diff = std::fabs(other.norm - ref.norm);
    const double scale = std::max(std::fabs(ref.norm), std::fabs(other.norm));
    worst = std::max(worst, scale > 0 ? diff / scale : 0.0);
  }
  return worst;
}

std::string DescribeGroups(const TensorDivergence& d) {
  std::string s;
  for (size_t g = 0; g < d.groups.size(); ++g) {
    if (g > 0) s += "; ";
    s += RankPhrase(d.groups[g].ranks) + ": " + (d.groups[g].digest ? d.groups[g].digest->ToHex() : "missing");
  }
  return s;
}

}  // namespace

namespace {

// Compares one tensor among `members` (ranks, increasing): held[i] is members[i]'s record of it,
// null where that rank lacks it (missing). A divergence, if any, goes to `out`.
void CompareWithin(int64_t step, const std::string& tensor, TensorKind kind, const std::vector<int>& members,
                   const std::vector<const TensorRecord*>& held, const std::shared_ptr<const ReplicaGroup>& group,
                   std::vector<TensorDivergence>& out, ComparedCells* compared) {
  if (members.size() < 2) return;
  // A zero gradient where another rank has none says the same: nothing to apply. Muon's
  // distributed step gives the parameter it owns a zero gradient when it has none, so that its
  // owner joins every all_gather (muon_skip_none_grad_fixed in examples/real_bugs); the other
  // ranks never touch it.
  if (kind == TensorKind::kGrad &&
      std::any_of(held.begin(), held.end(), [](const TensorRecord* t) { return t == nullptr; }) &&
      std::all_of(held.begin(), held.end(), [](const TensorRecord* t) { return t == nullptr || t->norm == 0.0; })) {
    return;
  }
  if (compared != nullptr &&
      std::count_if(held.begin(), held.end(), [](const TensorRecord* t) { return t != nullptr; }) >= 2) {
    ++compared->cells;
    compared->tensors.insert(tensor);
    compared->groups.insert(group == nullptr ? std::vector<int>{} : group->ranks);
  }
  std::vector<DigestGroup> groups;
  for (size_t i = 0; i < members.size(); ++i) {
    const TensorRecord* t = held[i];
    std::optional<Digest128> digest;
    double norm = 0.0;
    if (t != nullptr) {
      digest = t->digest;
      norm = t->norm;
    }
    if (groups.size() == 1 && groups[0].digest == digest) {  // the common case: all agree so far
      groups[0].ranks.push_back(members[i]);
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const DigestGroup& x) { return x.digest == digest; });
    if (g == groups.end()) groups.push_back(DigestGroup{{members[i]}, digest, norm});
    else g->ranks.push_back(members[i]);
  }
  if (groups.size() < 2) return;
  // Groups were created in rank order, so a stable sort by size keeps "lowest rank first"
  // among equal sizes: without a majority, the lowest rank's group is the reference.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const DigestGroup& a, const DigestGroup& b) { return a.ranks.size() > b.ranks.size(); });
  TensorDivergence d;
  d.step = step;
  d.tensor = tensor;
  d.kind = kind;
  d.group = group;
  d.has_majority = groups.front().ranks.size() * 2 > members.size();
  for (size_t g = 1; g < groups.size(); ++g) {
    d.odd_ranks.insert(d.odd_ranks.end(), groups[g].ranks.begin(), groups[g].ranks.end());
  }
  std::sort(d.odd_ranks.begin(), d.odd_ranks.end());
  d.groups = std::move(groups);
  out.push_back(std::move(d));
}

// Whether the ranks' replicated tensors of the world (`listed`, per rank) are each held by one rank
// only, and by at least two ranks in all: each rank keeps the state of its own share of the
// parameters (a hand-written sharded optimizer, Muon's round-robin step), or the gradients of its
// own share (reduced to their owner, as fairscale's ShardedDDP does, and freed elsewhere), which
// nothing says should agree. One rank holding what another lacks is still missing state (a checkpoint loaded on rank
// 0 only).
bool OwnSharesOnly(const std::vector<std::vector<const TensorRecord*>>& listed) {
  std::unordered_map<std::string, int> holders;
  int ranks_holding = 0;
  for (const auto& list : listed) {
    bool holds = false;
    for (const TensorRecord* t : list) {
      if (t->group != nullptr) return false;  // replica groups of their own: compared within them
      if (++holders[t->name] > 1) return false;
      holds = true;
    }
    ranks_holding += holds ? 1 : 0;
  }
  return ranks_holding >= 2;
}

}  // namespace

std::vector<TensorDivergence> DivergencesAtStep(int64_t step, const std::vector<const StepRecord*>& records,
                                                TensorKind kind, ComparedCells* compared) {
  const int64_t cells_before = compared != nullptr ? compared->cells : 0;
  std::vector<int> ranks;  // ranks that recorded this step, increasing
  std::vector<std::vector<const TensorRecord*>> listed;  // per rank: its tensors of `kind`, recording order
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r] == nullptr) continue;
    ranks.push_back(static_cast<int>(r));
    listed.emplace_back();
    for (const TensorRecord& t : records[r]->tensors) {
      if (t.kind == kind && t.replicated) listed.back().push_back(&t);
    }
  }
  std::vector<TensorDivergence> out;
  if (ranks.size() < 2) return out;

  // Every rank listing the same names in the same order (the usual case) compares position by
  // position; otherwise by name, names in recording order, first rank first, the last record of
  // a name winning. Both give the same cells; the first saves a hash map per rank and step.
  bool aligned = true;
  for (size_t i = 1; i < listed.size() && aligned; ++i) {
    aligned = listed[i].size() == listed[0].size();
    for (size_t k = 0; k < listed[0].size() && aligned; ++k) aligned = listed[i][k]->name == listed[0][k]->name;
  }
  std::vector<std::string> names;
  std::vector<std::unordered_map<std::string, const TensorRecord*>> by_name;
  // Per rank, the tensors of `kind` it holds as its own this step (recorded, not replicated): such
  // a rank is no member of that tensor's comparison, not a rank that lacks it. The probe records
  // so a DDP's buffers after a rank's last step, which no broadcast made equal.
  std::vector<std::set<std::string>> own;
  if (aligned) {
    std::unordered_map<std::string, size_t> seen;
    for (const TensorRecord* t : listed[0]) aligned = aligned && seen.emplace(t->name, 0).second;
  }
  if (!aligned) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      own.emplace_back();
      for (const TensorRecord& t : records[static_cast<size_t>(ranks[i])]->tensors) {
        if (t.kind == kind && !t.replicated) own.back().insert(t.name);
      }
    }
    std::set<std::string> seen;
    for (const auto& list : listed) {
      by_name.emplace_back();
      for (const TensorRecord* t : list) {
        by_name.back()[t->name] = t;
        if (seen.insert(t->name).second) names.push_back(t->name);
      }
    }
  }
  if (!aligned && (kind == TensorKind::kOptimizerState || kind == TensorKind::kGrad) && OwnSharesOnly(listed)) return out;
  const size_t cells = aligned ? listed[0].size() : names.size();
  std::vector<const TensorRecord*> cell(ranks.size());
  std::vector<int> members;
  std::vector<const TensorRecord*> held;
  for (size_t k = 0; k < cells; ++k) {
    // Each rank's record of this tensor, and the replica groups they name (usually one).
    std::vector<std::shared_ptr<const ReplicaGroup>> replica_groups;
    bool any_world = false;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const TensorRecord* t = nullptr;
      if (aligned) {
        t = listed[i][k];
      } else if (auto it = by_name[i].find(names[k]); it != by_name[i].end()) {
        t = it->second;
      }
      cell[i] = t;
      if (t == nullptr) continue;
      if (t->group == nullptr) {
        any_world = true;
      } else if (std::none_of(replica_groups.begin(), replica_groups.end(),
                              [&](const auto& g) { return SameReplicaGroup(g, t->group); })) {
        replica_groups.push_back(t->group);
      }
    }
    const std::string& tensor = aligned ? listed[0][k]->name : names[k];
    // The whole world (a DDP program's tensors): every rank that recorded the step must hold it.
    if (any_world || replica_groups.empty()) {
      members.clear();
      held.clear();
      for (size_t i = 0; i < ranks.size(); ++i) {
        const TensorRecord* t = cell[i];
        if (t == nullptr && !own.empty() && own[i].count(tensor) != 0) continue;
        members.push_back(ranks[i]);
        held.push_back(t != nullptr && t->group == nullptr ? t : nullptr);
      }
      CompareWithin(step, tensor, kind, members, held, nullptr, out, compared);
    }
    // Each replica group: its members that recorded the step must hold it, in that group.
    for (const std::shared_ptr<const ReplicaGroup>& g : replica_groups) {
      members.clear();
      held.clear();
      for (int r : g->ranks) {
        auto at = std::lower_bound(ranks.begin(), ranks.end(), r);
        if (at == ranks.end() || *at != r) continue;  // no record of this step from that rank
        const TensorRecord* t = cell[static_cast<size_t>(at - ranks.begin())];
        members.push_back(r);
        held.push_back(t != nullptr && SameReplicaGroup(t->group, g) ? t : nullptr);
      }
      CompareWithin(step, tensor, kind, members, held, g, out, compared);
    }
  }
  if (compared != nullptr && compared->cells > cells_before) ++compared->steps;
  return out;
}

namespace {

// Collects every cell, for FindDivergences.
class CollectingJudge : public StepJudge {
 public:
  explicit CollectingJudge(TensorKind kind) : kind_(kind) {}
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    std::vector<TensorDivergence> at = DivergencesAtStep(step, records, kind_);
    all.insert(all.end(), std::make_move_iterator(at.begin()), std::make_move_iterator(at.end()));
  }
  std::vector<Finding> Finish(const CheckContext&) override { return {}; }
  std::vector<TensorDivergence> all;

 private:
  TensorKind kind_;
};

}  // namespace

std::vector<TensorDivergence> FindDivergences(const std::vector<RankTrace>& traces, TensorKind kind) {
  CollectingJudge judge(kind);
  const Scenario scenario;
  const LaunchReport launch;
  JudgeInMemory(judge, "", CheckContext{scenario, traces, launch});
  return std::move(judge.all);
}

namespace {

// The first divergent step's cells, and how many steps diverged after it.
class ReplicaJudge : public StepJudge {
 public:
  explicit ReplicaJudge(ReplicaComparison what) : what_(std::move(what)) {}
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    // The step after the first divergence: whether a rank's gradients there were the others'
    // one step later (a skipped optimizer step), read while its records are at hand.
    if (!first_.empty() && !next_step_seen_) {
      next_step_seen_ = true;
      if (step == facts_.step + 1) facts_.one_step_behind = RanksOneStepBehind(facts_, records);
    }
    std::vector<TensorDivergence> at = DivergencesAtStep(step, records, what_.kind, &compared_);
    if (at.empty()) {
      if (first_.empty()) NoteAgreedStep(step, records);
      return;
    }
    if (first_.empty()) {
      first_ = std::move(at);
      facts_ = DivergenceFactsAt(step, records);  // what the other kinds did at this step, for the cause
      facts_.steps_recorded_before = steps_before_;
      facts_.parameters_last_agreed = parameters_last_agreed_;
    } else {
      ++later_steps_;
      last_step_ = step;
    }
  }
  std::vector<Finding> Finish(const CheckContext&) override;
  std::optional<CheckerCoverage> Coverage() const override {
    CheckerCoverage c;
    c.kind = ToString(what_.kind);
    c.tensors = static_cast<int64_t>(compared_.tensors.size());
    c.steps = compared_.steps;
    c.groups = static_cast<int64_t>(compared_.groups.size());
    c.comparisons = compared_.cells;
    return c;
  }

 private:
  // A step before the first divergence of this kind: whether the parameters agreed at it too
  // (update_after_agreeing_gradients reads it). The parameters' own judge knows without looking;
  // the gradients' judge never needs it (that cause holds only where the gradients agree), so
  // only the optimizer-state and buffer judges compare the parameters again.
  void NoteAgreedStep(int64_t step, const std::vector<const StepRecord*>& records) {
    ++steps_before_;
    if (what_.kind == TensorKind::kGrad) return;
    if (what_.kind == TensorKind::kParam || DivergencesAtStep(step, records, TensorKind::kParam).empty()) {
      parameters_last_agreed_ = step;
    }
  }

  ReplicaComparison what_;
  ComparedCells compared_;
  std::vector<TensorDivergence> first_;
  DivergenceFacts facts_;
  int64_t steps_before_ = 0;
  std::optional<int64_t> parameters_last_agreed_;
  int64_t later_steps_ = 0;
  int64_t last_step_ = 0;
  bool next_step_seen_ = false;
};

}  // namespace

std::unique_ptr<StepJudge> StartReplicaJudge(const ReplicaComparison& what) { return std::make_unique<ReplicaJudge>(what); }

std::vector<Finding> CompareReplicas(const CheckContext& context, const ReplicaComparison& what) {
  return JudgeInMemory(*StartReplicaJudge(what), what.checker, context);
}

std::vector<Finding> ReplicaJudge::Finish(const CheckContext& context) {
  if (first_.empty()) return {};
  const ReplicaComparison& what = what_;
  const int64_t first_step = first_.front().step;
  std::vector<const TensorDivergence*> at_step;
  for (const TensorDivergence& d : first_) at_step.push_back(&d);

  Finding f;
  f.checker = what.checker;
  f.step = first_step;
  f.tensor = at_step.front()->tensor;
  std::set<int> odd;
  // Without a majority the digests cannot tell which side is wrong: every rank that disagrees is
  // named, never the side opposite the lowest rank alone (a 2-rank edit on rank 0 named rank 1).
  std::set<int> disagreeing;
  std::set<std::string> tensor_names;
  bool all_have_majority = true;
  double max_rel = 0.0;
  bool have_rel = false;
  std::vector<std::string> missing;
  std::vector<std::string> replica_groups;  // the groups that diverged, described, first seen first
  for (const TensorDivergence* d : at_step) {
    if (tensor_names.insert(d->tensor).second && f.tensors.size() < kMaxTensorsInFinding) f.tensors.push_back(d->tensor);
    odd.insert(d->odd_ranks.begin(), d->odd_ranks.end());
    if (d->has_majority) {
      disagreeing.insert(d->odd_ranks.begin(), d->odd_ranks.end());
    } else {
      for (const DigestGroup& g : d->groups) disagreeing.insert(g.ranks.begin(), g.ranks.end());
    }
    all_have_majority = all_have_majority && d->has_majority;
    for (const DigestGroup& g : d->groups) {
      if (!g.digest) missing.push_back(d->tensor + " on " + RankPhrase(g.ranks));
    }
    if (d->group != nullptr) {
      const std::string described = DescribeReplicaGroup(*d->group);
      if (std::find(replica_groups.begin(), replica_groups.end(), described) == replica_groups.end()) {
        replica_groups.push_back(described);
      }
    }
    const double rel = MaxRelNormDiff(*d);
    if (!std::isnan(rel)) {
      max_rel = have_rel ? std::max(max_rel, rel) : rel;
      have_rel = true;
    }
  }
  f.ranks = all_have_majority ? std::vector<int>(odd.begin(), odd.end())
                               : std::vector<int>(disagreeing.begin(), disagreeing.end());
  // Without a majority, the ranks' own records may still single a side out: the one that wrote
  // the weights after its optimizer step (the probe watches that at 2 ranks).
  const std::vector<int> edited =
      all_have_majority || what.kind != TensorKind::kParam ? std::vector<int>{} : RanksThatEditedAfterUpdate(facts_);
  if (!edited.empty()) f.ranks = edited;

  const TensorDivergence& first = *at_step.front();
  const size_t differ = tensor_names.size();
  std::string msg = what.noun + " diverge at step " + std::to_string(first_step);
  if (first_step == 0) msg += " (after initialization and the initial broadcast)";
  if (first.group == nullptr) {
    msg += ": " + std::to_string(differ) + (differ == 1 ? " tensor differs" : " tensors differ") +
           " across ranks (first: " + first.tensor + ")";
  } else {
    // A sharded or model-parallel tensor: only its replica group must agree, and is named.
    msg += ": " + std::to_string(differ) + (differ == 1 ? " tensor differs" : " tensors differ") +
           " within a replica group (first: " + first.tensor + ", replica group " + replica_groups.front() + ")";
  }
  const std::vector<int>& first_odd = first.odd_ranks;
  if (all_have_majority && first.group != nullptr) {
    msg += "; " + RankPhrase(first_odd) + (first_odd.size() == 1 ? " differs" : " differ") +
           " from the rest of its replica group (" + RankPhrase(first.groups.front().ranks) + ")";
  } else if (all_have_majority) {
    msg += "; " + RankPhrase(f.ranks) + (f.ranks.size() == 1 ? " differs" : " differ") +
           " from the majority (" + RankPhrase(first.groups.front().ranks) + ")";
  } else {
    int compared = 0;
    for (const DigestGroup& g : first.groups) compared += static_cast<int>(g.ranks.size());
    msg += "; no majority among " + std::string(first.group == nullptr ? "" : "the ") + std::to_string(compared) +
           " ranks" + (first.group == nullptr ? "" : " of the group");
    if (edited.empty()) {
      msg += ": the records cannot tell which side is wrong, so every rank that disagrees is named (" +
             RankPhrase(f.ranks) + ")";
    } else {
      msg += ", but the ranks' own records single one side out: " + RankPhrase(edited) +
             (edited.size() == 1 ? " wrote its" : " wrote their") +
             " weights after the optimizer step, before the next forward (the cause says which)";
      f.details["named"] = "the side that wrote its weights after its update";
    }
    msg += "; groups of " + first.tensor + ": " + DescribeGroups(first);
    f.details["majority"] = "none";
  }
  if (replica_groups.size() > 1) {
    msg += "; also in replica group" + std::string(replica_groups.size() > 2 ? "s " : " ") +
           JoinCapped(std::vector<std::string>(replica_groups.begin() + 1, replica_groups.end()), 5);
  }
  if (!replica_groups.empty()) f.details["replica_groups"] = JoinCapped(replica_groups, replica_groups.size());
  if (!missing.empty()) msg += "; missing: " + JoinCapped(missing, 5);
  if (have_rel) {
    f.details["max_rel_diff"] = FormatNumber(max_rel, 3);
    if (max_rel < kRoundingLevelRelDiff) {
      msg += "; the difference is at rounding level (max relative norm difference " + FormatNumber(max_rel, 3) + ")";
    } else {
      msg += "; max relative norm difference " + FormatNumber(max_rel, 3);
    }
  }
  if (later_steps_ > 0) {
    msg += "; diverged again at " + std::to_string(later_steps_) + " later step" + (later_steps_ == 1 ? "" : "s") +
           " (last: " + std::to_string(last_step_) + ")";
    f.details["later_divergent_steps"] = std::to_string(later_steps_);
    f.details["last_divergent_step"] = std::to_string(last_step_);
  }
  f.message = msg;
  AddCollectiveFacts(context.traces, &facts_);
  f.cause = ExplainDivergence(facts_).value_or("");
  f.details["groups"] = DescribeGroups(first);
  f.details["divergent_tensors"] = std::to_string(differ);
  f.details["kind"] = ToString(what.kind);
  return {f};
}

}  // namespace lockstep
