#include "checkers/reference_checker.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>

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

ShardLayout Zero1Layout(const std::vector<RankTrace>& traces) {
  ShardLayout layout;
  for (size_t r = 0; r < traces.size(); ++r) {
    if (traces[r].steps.empty()) continue;
    const StepRecord& last = traces[r].steps.back();
    int64_t offset = 0;
    for (const TensorRecord& t : last.tensors) {
      if (t.kind == TensorKind::kParam) {
        layout.param_range.emplace(t.name, std::make_pair(offset, offset + t.numel));
        offset += t.numel;
      }
      const std::string prefix = "zero1.grad_shard";
      if (t.kind == TensorKind::kGrad && !t.replicated && t.name.rfind(prefix, 0) == 0) {
        const int64_t shard = std::atoll(t.name.c_str() + prefix.size());
        layout.rank_range[static_cast<int>(r)] = {shard * t.numel, (shard + 1) * t.numel};
      }
    }
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

}  // namespace

std::vector<Finding> ReferenceChecker::Check(const CheckContext& context) const {
  Finding f;
  f.checker = std::string(name());
  if (!context.reference || context.reference->empty() || !internal::HasData(context.reference->front())) {
    f.outcome = FindingOutcome::kError;
    f.message = "no 1-rank reference run to compare with";
    return {f};
  }
  const RankTrace& ref_trace = context.reference->front();
  const std::map<int64_t, double> ref_loss = MeanLossCurve(*context.reference);
  const NormTable ref_norms = ReplicatedNorms(ref_trace);
  // Without the split reference there is no noise measurement: the floor alone applies.
  const bool have_split = context.reference_split && !context.reference_split->empty() &&
                          internal::HasData(context.reference_split->front());
  std::map<int64_t, double> split_loss;
  NormTable split_norms;
  if (have_split) {
    split_loss = MeanLossCurve(*context.reference_split);
    split_norms = ReplicatedNorms(context.reference_split->front());
  }
  const Envelope envelope = NoiseEnvelope(ref_loss, ref_norms, split_loss, split_norms);
  const double rtol = context.scenario.tolerances.reference_rtol;
  const double atol = context.scenario.tolerances.reference_atol;
  // The envelope of `kind` at `step`: its value at the last measured step <= `step`.
  auto noise_at = [&](int64_t step, const std::string& kind) {
    auto it = envelope.upper_bound(step);
    if (it == envelope.begin()) return 0.0;
    const auto& row = std::prev(it)->second;
    auto k = row.find(kind);
    return k == row.end() ? 0.0 : k->second;
  };
  auto rel_tol_of = [&](int64_t step, const std::string& kind) { return rtol + kNoiseMargin * noise_at(step, kind); };
  auto split_value = [](const auto& table, int64_t step) -> const auto* {
    auto it = table.find(step);
    return it == table.end() ? nullptr : &it->second;
  };

  std::vector<NormTable> run_norms;
  for (const RankTrace& t : context.traces) run_norms.push_back(ReplicatedNorms(t));
  const std::map<int64_t, double> run_loss = MeanLossCurve(context.traces);
  std::set<int64_t> steps;
  for (const auto& [step, loss] : run_loss) steps.insert(step);

  int compared = 0;
  int differing_steps = 0;
  bool found = false;
  for (int64_t step : steps) {
    auto ref_row = ref_norms.find(step);
    if (ref_row == ref_norms.end()) continue;
    const std::map<std::string, double>* split_row = split_value(split_norms, step);

    // The loss (the mean over the ranks) ...
    std::optional<Comparison> loss;
    if (auto it = ref_loss.find(step); it != ref_loss.end()) {
      const double* s = split_value(split_loss, step);
      loss = Compare(run_loss.at(step), it->second, s ? std::optional<double>(*s) : std::nullopt, atol,
                     rel_tol_of(step, "loss"));
      ++compared;
    }
    // ... and every replicated tensor of every rank, in recording order.
    std::vector<std::string> divergent;  // "kind:name", first rank's order
    std::map<std::string, Comparison> first_of;
    std::set<int> divergent_ranks;
    int ranks_compared = 0;
    for (size_t r = 0; r < context.traces.size(); ++r) {
      const RankTrace& trace = context.traces[r];
      auto rec = std::find_if(trace.steps.begin(), trace.steps.end(), [&](const StepRecord& s) { return s.step == step; });
      if (rec == trace.steps.end()) continue;
      ++ranks_compared;
      for (const TensorRecord& t : rec->tensors) {
        if (!t.replicated) continue;
        const std::string key = Key(t);
        auto ref = ref_row->second.find(key);
        if (ref == ref_row->second.end()) continue;
        std::optional<double> split;
        if (split_row) {
          if (auto s = split_row->find(key); s != split_row->end()) split = s->second;
        }
        ++compared;
        const Comparison c = Compare(t.norm, ref->second, split, atol, rel_tol_of(step, KindOf(key)));
        if (!c.outside) continue;
        divergent_ranks.insert(static_cast<int>(r));
        if (!first_of.count(key)) {
          divergent.push_back(key);
          first_of.emplace(key, c);
        }
      }
    }
    if (divergent.empty() && !(loss && loss->outside)) continue;
    ++differing_steps;
    if (found) continue;
    found = true;
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
      const ShardLayout layout = Zero1Layout(context.traces);
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
      const std::string loss_text = "loss " + internal::FormatNumber(loss->value, 10) + " with " +
                                    std::to_string(context.traces.size()) + " ranks vs " +
                                    internal::FormatNumber(loss->reference, 10) + " in the 1-rank reference (relative difference " +
                                    FormatNumber(loss->rel_diff, 3) + ")";
      what = what.empty() ? loss_text : loss_text + "; " + what;
      f.details["loss"] = internal::FormatExact(loss->value);
      f.details["reference_loss"] = internal::FormatExact(loss->reference);
      if (!f.details.count("rel_diff")) f.details["rel_diff"] = FormatNumber(loss->rel_diff, 3);
    }
    // The tolerance of the first quantity named.
    const std::string first_kind = !divergent.empty() ? KindOf(divergent.front()) : "loss";
    const double noise = noise_at(step, first_kind);
    const double rel_tol = rel_tol_of(step, first_kind);
    f.message = "step " + std::to_string(step) + " leaves the floating-point envelope of the 1-rank reference: " + what +
                "; tolerance rtol " + FormatNumber(rel_tol, 3) + " = " + FormatNumber(rtol, 3) + " + " +
                FormatNumber(kNoiseMargin, 3) + " x measured " + first_kind + " noise " + FormatNumber(noise, 3) +
                " (atol " + FormatNumber(atol, 3) + ")" + (have_split ? "" : "; no split reference: noise not measured");
    f.details["tolerance_rtol"] = FormatNumber(rel_tol, 3);
    f.details["noise"] = FormatNumber(noise, 3);
  }
  if (compared == 0) {
    f.outcome = FindingOutcome::kError;
    f.message = "the run and its 1-rank reference share no step to compare";
    return {f};
  }
  if (!found) return {};
  if (differing_steps > 1) {
    f.message += "; " + std::to_string(differing_steps - 1) + " later step" + (differing_steps == 2 ? "" : "s") +
                 " differ too";
    f.details["differing_steps"] = std::to_string(differing_steps);
  }
  return {f};
}

}  // namespace lockstep
