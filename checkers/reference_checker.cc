#include "checkers/reference_checker.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "checkers/internal/check_util.h"
#include "checkers/loss_curve.h"

namespace lockstep {
namespace {

using internal::FormatNumber;

// step -> "kind:name" -> norm, of the replicated tensors of one rank.
using NormTable = std::map<int64_t, std::map<std::string, double>>;

std::string Key(const TensorRecord& t) { return std::string(ToString(t.kind)) + ":" + t.name; }

NormTable ReplicatedNorms(const RankTrace& trace) {
  NormTable table;
  for (const StepRecord& s : trace.steps) {
    auto& row = table[s.step];
    row.clear();  // the last record of a step wins
    for (const TensorRecord& t : s.tensors) {
      if (t.replicated) row[Key(t)] = t.norm;
    }
  }
  return table;
}

// |a - b| relative to the larger magnitude; 0 for two equal values (NaN equal to NaN), infinity
// when only one is finite.
double RelDiff(double a, double b) {
  if (internal::SameDouble(a, b)) return 0.0;
  if (!std::isfinite(a) || !std::isfinite(b)) return INFINITY;
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale > 0 ? std::fabs(a - b) / scale : 0.0;
}

// "param" for "param:w", "loss" for the loss: noise is measured per kind of quantity, so that a
// noisy kind (gradients near zero, whose relative noise is large) does not blunt the test of a
// quiet one (parameters, which a wrong zero1 shard update changes).
std::string KindOf(const std::string& key) { return key.substr(0, key.find(':')); }

// The floating-point noise of the scenario: per step and kind of quantity, the running maximum
// of the relative differences between the two references over every quantity of that kind.
using Envelope = std::map<int64_t, std::map<std::string, double>>;

Envelope NoiseEnvelope(const std::map<int64_t, double>& loss_a, const NormTable& norms_a,
                       const std::map<int64_t, double>& loss_b, const NormTable& norms_b) {
  Envelope per_step;
  for (const auto& [step, la] : loss_a) {
    auto lb = loss_b.find(step);
    if (lb != loss_b.end() && std::isfinite(la) && std::isfinite(lb->second)) {
      per_step[step]["loss"] = RelDiff(la, lb->second);
    }
  }
  for (const auto& [step, row] : norms_a) {
    auto other = norms_b.find(step);
    if (other == norms_b.end()) continue;
    auto& noise = per_step[step];
    for (const auto& [key, norm] : row) {
      auto it = other->second.find(key);
      if (it != other->second.end() && std::isfinite(norm) && std::isfinite(it->second)) {
        double& n = noise[KindOf(key)];
        n = std::max(n, RelDiff(norm, it->second));
      }
    }
  }
  std::map<std::string, double> running;
  for (auto& [step, noise] : per_step) {
    for (auto& [kind, n] : noise) running[kind] = std::max(running[kind], n);
    noise = running;
  }
  return per_step;
}

// One value of the run against both references.
struct Comparison {
  double value = 0.0;
  double reference = 0.0;  // the plain reference's value
  double rel_diff = 0.0;   // to the nearer reference
  bool outside = false;
};

Comparison Compare(double value, double ref, std::optional<double> split, double atol, double rel_tol) {
  Comparison c;
  c.value = value;
  c.reference = ref;
  auto outside = [&](double r) {
    if (std::isnan(value) && std::isnan(r)) return false;
    if (!std::isfinite(value) || !std::isfinite(r)) return !internal::SameDouble(value, r);
    return std::fabs(value - r) > atol + rel_tol * std::fabs(r);
  };
  c.outside = outside(ref) && (!split || outside(*split));
  c.rel_diff = RelDiff(value, ref);
  if (split) c.rel_diff = std::min(c.rel_diff, RelDiff(value, *split));
  return c;
}

// ZeRO-1 layout as the run's traces show it: parameters in recording order, each at an offset of
// the flat buffer; rank r holds elements [shard*S, (shard+1)*S) (its "zero1.grad_shard<d>").
struct ShardLayout {
  std::map<std::string, std::pair<int64_t, int64_t>> param_range;  // name -> [begin, end)
  std::map<int, std::pair<int64_t, int64_t>> rank_range;           // rank -> [begin, end)
  bool empty() const { return rank_range.empty(); }
};

// One rank's part of the layout, from one of its step records.
struct RankLayout {
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> params;  // recording order
  std::optional<std::pair<int64_t, int64_t>> shard;
};

RankLayout LayoutOf(const StepRecord& record) {
  RankLayout layout;
  int64_t offset = 0;
  const std::string prefix = "zero1.grad_shard";
  for (const TensorRecord& t : record.tensors) {
    if (t.kind == TensorKind::kParam) {
      layout.params.emplace_back(t.name, std::make_pair(offset, offset + t.numel));
      offset += t.numel;
    }
    if (t.kind == TensorKind::kGrad && !t.replicated && t.name.rfind(prefix, 0) == 0) {
      const int64_t shard = std::atoll(t.name.c_str() + prefix.size());
      layout.shard = std::make_pair(shard * t.numel, (shard + 1) * t.numel);
    }
  }
  return layout;
}

// The ranks' parts together: a parameter's range as the lowest rank with one records it.
ShardLayout Zero1Layout(const std::map<int, RankLayout>& ranks) {
  ShardLayout layout;
  for (const auto& [rank, part] : ranks) {
    for (const auto& [name, range] : part.params) layout.param_range.emplace(name, range);
    if (part.shard) layout.rank_range[rank] = *part.shard;
  }
  return layout;
}

// The ranks whose shard overlaps every one of `tensors` (a wrong update of one shard shows in
// every tensor that reaches into it); empty when no rank does.
std::vector<int> ShardOwners(const ShardLayout& layout, const std::vector<std::string>& tensors) {
  std::vector<int> owners;
  for (const auto& [rank, range] : layout.rank_range) {
    bool all = !tensors.empty();
    for (const std::string& name : tensors) {
      auto it = layout.param_range.find(name);
      all = all && it != layout.param_range.end() && it->second.first < range.second &&
            range.first < it->second.second;
    }
    if (all) owners.push_back(rank);
  }
  return owners;
}

// The judge: made with the two 1-rank references (small, held whole), it compares each step of
// the N-rank run as it streams and keeps only the first differing step's finding and counters.
class ReferenceJudge : public StepJudge {
 public:
  ReferenceJudge(std::string checker, const JudgeStart& start)
      : checker_(std::move(checker)), rtol_(start.tolerances.reference_rtol), atol_(start.tolerances.reference_atol) {
    have_reference_ = start.reference && !start.reference->empty() && internal::HasData(start.reference->front());
    if (!have_reference_) return;
    ref_loss_ = MeanLossCurve(*start.reference);
    ref_norms_ = ReplicatedNorms(start.reference->front());
    // Without the split reference there is no noise measurement: the floor alone applies.
    have_split_ = start.reference_split && !start.reference_split->empty() &&
                  internal::HasData(start.reference_split->front());
    if (have_split_) {
      split_loss_ = MeanLossCurve(*start.reference_split);
      split_norms_ = ReplicatedNorms(start.reference_split->front());
    }
    envelope_ = NoiseEnvelope(ref_loss_, ref_norms_, split_loss_, split_norms_);
  }

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    if (!have_reference_) return;
    // The ZeRO-1 layout (parameter order and offsets, each rank's gradient shard) does not change
    // after a rank's first step, so each rank's is taken from the first record it streams.
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] && !records[r]->tensors.empty() && !layouts_.count(static_cast<int>(r))) {
        layouts_.emplace(static_cast<int>(r), LayoutOf(*records[r]));
      }
    }
    auto ref_row = ref_norms_.find(step);
    if (ref_row == ref_norms_.end()) return;
    const std::map<std::string, double>* split_row = Find(split_norms_, step);

    // The loss (the mean over the ranks that recorded the step) ...
    std::optional<Comparison> loss;
    if (auto it = ref_loss_.find(step); it != ref_loss_.end()) {
      double sum = 0.0;
      int n = 0;
      for (const StepRecord* record : records) {
        if (!record) continue;
        sum += record->loss;
        ++n;
      }
      const double* s = Find(split_loss_, step);
      loss = Compare(sum / n, it->second, s ? std::optional<double>(*s) : std::nullopt, atol_,
                     RelTolOf(step, "loss"));
      ++compared_;
    }
    // ... and every replicated tensor of every rank, in recording order.
    std::vector<std::string> divergent;  // "kind:name", first rank's order
    std::map<std::string, Comparison> first_of;
    std::set<int> divergent_ranks;
    int ranks_compared = 0;
    for (size_t r = 0; r < records.size(); ++r) {
      if (!records[r]) continue;
      ++ranks_compared;
      for (const TensorRecord& t : records[r]->tensors) {
        if (!t.replicated) continue;
        const std::string key = Key(t);
        auto ref = ref_row->second.find(key);
        if (ref == ref_row->second.end()) continue;
        std::optional<double> split;
        if (split_row) {
          if (auto s = split_row->find(key); s != split_row->end()) split = s->second;
        }
        ++compared_;
        const Comparison c = Compare(t.norm, ref->second, split, atol_, RelTolOf(step, KindOf(key)));
        if (!c.outside) continue;
        divergent_ranks.insert(static_cast<int>(r));
        if (!first_of.count(key)) {
          divergent.push_back(key);
          first_of.emplace(key, c);
        }
      }
    }
    if (divergent.empty() && !(loss && loss->outside)) return;
    ++differing_steps_;
    if (!first_) first_ = Describe(step, records.size(), loss, divergent, first_of, divergent_ranks, ranks_compared);
  }

  std::vector<Finding> Finish(const CheckContext&) override {
    Finding f;
    f.checker = checker_;
    if (!have_reference_) {
      f.outcome = FindingOutcome::kError;
      f.message = "no 1-rank reference run to compare with";
      return {f};
    }
    if (compared_ == 0) {
      f.outcome = FindingOutcome::kError;
      f.message = "the run and its 1-rank reference share no step to compare";
      return {f};
    }
    if (!first_) return {};
    f = *first_;
    if (differing_steps_ > 1) {
      f.message += "; " + std::to_string(differing_steps_ - 1) + " later step" + (differing_steps_ == 2 ? "" : "s") +
                   " differ too";
      f.details["differing_steps"] = std::to_string(differing_steps_);
    }
    return {f};
  }

 private:
  template <typename Table>
  static const typename Table::mapped_type* Find(const Table& table, int64_t step) {
    auto it = table.find(step);
    return it == table.end() ? nullptr : &it->second;
  }

  // The envelope of `kind` at `step`: its value at the last measured step <= `step`.
  double NoiseAt(int64_t step, const std::string& kind) const {
    auto it = envelope_.upper_bound(step);
    if (it == envelope_.begin()) return 0.0;
    const auto& row = std::prev(it)->second;
    auto k = row.find(kind);
    return k == row.end() ? 0.0 : k->second;
  }
  double RelTolOf(int64_t step, const std::string& kind) const { return rtol_ + kNoiseMargin * NoiseAt(step, kind); }

  // The finding of the first differing step, less the count of later ones (Finish adds it).
  Finding Describe(int64_t step, size_t world, const std::optional<Comparison>& loss,
                   const std::vector<std::string>& divergent, const std::map<std::string, Comparison>& first_of,
                   const std::set<int>& divergent_ranks, int ranks_compared) const {
    Finding f;
    f.checker = checker_;
    f.step = step;
    std::string what;
    std::vector<std::string> names;
    for (const std::string& key : divergent) names.push_back(key.substr(key.find(':') + 1));
    if (!divergent.empty()) {
      const Comparison& c = first_of.at(divergent.front());
      f.tensor = names.front();
      f.tensors = names;
      std::vector<int> ranks(divergent_ranks.begin(), divergent_ranks.end());
      std::string held;
      // Every rank holds the same wrong value: sharded state went wrong before it was gathered.
      const ShardLayout layout = Zero1Layout(layouts_);
      if (static_cast<int>(ranks.size()) == ranks_compared && !layout.empty()) {
        std::vector<std::string> params;
        for (size_t i = 0; i < divergent.size(); ++i) {
          if (divergent[i].rfind("param:", 0) == 0) params.push_back(names[i]);
        }
        std::vector<int> owners = ShardOwners(layout, params);
        if (!owners.empty()) {
          ranks = owners;
          held = "; every replica holds the same values, and the divergent parameters lie in the zero1 shard of " +
                 internal::RankPhrase(owners);
        }
      }
      f.ranks = ranks;
      what = std::to_string(divergent.size()) + " tensor" + (divergent.size() == 1 ? "" : "s") + " (" +
             internal::JoinCapped(names, 4) + ") on " + internal::RankPhrase(f.ranks) + "; first: " + divergent.front() +
             " norm " + internal::FormatNumber(c.value, 10) + " vs " + internal::FormatNumber(c.reference, 10) +
             " in the 1-rank reference (relative difference " + FormatNumber(c.rel_diff, 3) + ")" + held;
      f.details["rel_diff"] = FormatNumber(c.rel_diff, 3);
      f.details["norm"] = internal::FormatExact(c.value);
      f.details["reference_norm"] = internal::FormatExact(c.reference);
    }
    if (loss && loss->outside) {
      const std::string loss_text = "loss " + internal::FormatNumber(loss->value, 10) + " with " + std::to_string(world) +
                                    " ranks vs " + internal::FormatNumber(loss->reference, 10) +
                                    " in the 1-rank reference (relative difference " + FormatNumber(loss->rel_diff, 3) + ")";
      what = what.empty() ? loss_text : loss_text + "; " + what;
      f.details["loss"] = internal::FormatExact(loss->value);
      f.details["reference_loss"] = internal::FormatExact(loss->reference);
      if (!f.details.count("rel_diff")) f.details["rel_diff"] = FormatNumber(loss->rel_diff, 3);
    }
    // The tolerance of the first quantity named.
    const std::string first_kind = !divergent.empty() ? KindOf(divergent.front()) : "loss";
    const double noise = NoiseAt(step, first_kind);
    const double rel_tol = RelTolOf(step, first_kind);
    f.message = "step " + std::to_string(step) + " leaves the floating-point envelope of the 1-rank reference: " + what +
                "; tolerance rtol " + FormatNumber(rel_tol, 3) + " = " + FormatNumber(rtol_, 3) + " + " +
                FormatNumber(kNoiseMargin, 3) + " x measured " + first_kind + " noise " + FormatNumber(noise, 3) +
                " (atol " + FormatNumber(atol_, 3) + ")" + (have_split_ ? "" : "; no split reference: noise not measured");
    f.details["tolerance_rtol"] = FormatNumber(rel_tol, 3);
    f.details["noise"] = FormatNumber(noise, 3);
    return f;
  }

  std::string checker_;
  double rtol_;
  double atol_;
  bool have_reference_ = false;
  bool have_split_ = false;
  std::map<int64_t, double> ref_loss_, split_loss_;
  NormTable ref_norms_, split_norms_;
  Envelope envelope_;
  std::map<int, RankLayout> layouts_;  // rank -> its part of the ZeRO-1 layout
  int compared_ = 0;
  int differing_steps_ = 0;
  std::optional<Finding> first_;
};

}  // namespace

std::vector<Finding> ReferenceChecker::Check(const CheckContext& context) const {
  return JudgeInMemory(*StartJudge(JudgeStartFor(context)), name(), context);
}

std::unique_ptr<StepJudge> ReferenceChecker::StartJudge(const JudgeStart& start) const {
  return std::make_unique<ReferenceJudge>(std::string(name()), start);
}

}  // namespace lockstep
