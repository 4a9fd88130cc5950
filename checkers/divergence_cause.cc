#include "checkers/divergence_cause.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::FormatNumber;
using internal::RankPhrase;

constexpr TensorKind kReplicatedKinds[] = {TensorKind::kParam, TensorKind::kGrad, TensorKind::kBuffer,
                                           TensorKind::kOptimizerState};

bool Diverges(const DivergenceFacts& facts, TensorKind kind) {
  auto it = facts.divergent.find(kind);
  return it != facts.divergent.end() && !it->second.empty();
}

// The largest relative norm difference of a cell's groups from its reference group; NaN when a
// group has no digest (the tensor is missing there) or a norm is not finite: not a number that
// says "by how little".
double RelNormDiff(const TensorDivergence& d) {
  const DigestGroup& ref = d.groups.front();
  double worst = 0.0;
  for (const DigestGroup& g : d.groups) {
    if (!g.digest || !std::isfinite(g.norm) || !std::isfinite(ref.norm)) return std::numeric_limits<double>::quiet_NaN();
    const double scale = std::max(std::fabs(ref.norm), std::fabs(g.norm));
    worst = std::max(worst, scale > 0 ? std::fabs(g.norm - ref.norm) / scale : 0.0);
  }
  return worst;
}

bool EndsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// BatchNorm's (and the other norm layers') running statistics, by the names torch gives them.
bool IsRunningStatistic(const std::string& name) {
  for (std::string_view stat : {"running_mean", "running_var", "num_batches_tracked"}) {
    if (name == stat || EndsWith(name, std::string(".") + std::string(stat))) return true;
  }
  return false;
}

// Parameters or gradients differ at a step in which no rank issued any reducing collective: the
// gradients were never summed across ranks, so each rank trained on its own data alone. Whether
// the initial state was broadcast tells a model never wrapped in DDP from one whose DDP was
// built and then bypassed (Lightning#9237: `loss.backward()` under manual optimization).
std::optional<std::string> NoGradientReduction(const DivergenceFacts& facts) {
  if (facts.step < 1 || facts.ranks_compared < 2 || facts.reductions_in_step > 0) return std::nullopt;
  if (!Diverges(facts, TensorKind::kGrad) && !Diverges(facts, TensorKind::kParam)) return std::nullopt;
  const std::string none = "no gradient all-reduce was issued on any rank in step " + std::to_string(facts.step);
  if (facts.initial_broadcast) {
    return none +
           ", although the initial state was broadcast at step 0 (as DDP does when it wraps a model): the gradient "
           "reduction was bypassed (a backward DDP does not see, e.g. `loss.backward()` where Lightning's manual "
           "optimization needs `self.manual_backward(loss)`, or a `no_sync()` that never ends)";
  }
  return none + ": the model is probably not wrapped in DDP (its gradients are never averaged across ranks)";
}

// The same ranks hold, for every divergent gradient, the majority's gradient times the number
// of ranks: a rank that summed the gradients and did not divide by the world size.
std::optional<std::string> SumNotDivided(const DivergenceFacts& facts) {
  if (!Diverges(facts, TensorKind::kGrad) || facts.ranks_compared < 2) return std::nullopt;
  const double world = facts.ranks_compared;
  std::vector<int> odd;
  for (const TensorDivergence& d : facts.divergent.at(TensorKind::kGrad)) {
    if (d.groups.size() != 2 || !d.has_majority || !d.groups[0].digest || !d.groups[1].digest) return std::nullopt;
    if (odd.empty()) odd = d.odd_ranks;
    if (d.odd_ranks != odd) return std::nullopt;
    const double ref = d.groups[0].norm;
    const double other = d.groups[1].norm;
    if (!std::isfinite(ref) || !std::isfinite(other) || ref <= 0.0) return std::nullopt;
    // float32 sums of `world` terms in another order: far below a thousandth.
    if (std::fabs(other / ref - world) > 1e-3 * world) return std::nullopt;
  }
  const std::string who = RankPhrase(odd) + (odd.size() == 1 ? "'s" : "'");
  return who + " gradients are " + FormatNumber(world) + "x the others' (every divergent gradient at step " +
         std::to_string(facts.step) + "): a sum not divided by the world size (" + FormatNumber(world) + ")";
}

// Buffers differ while parameters, gradients and optimizer state agree: the buffers are updated
// on each rank from its own data and never synchronized.
std::optional<std::string> OnlyBuffers(const DivergenceFacts& facts) {
  if (!Diverges(facts, TensorKind::kBuffer)) return std::nullopt;
  for (TensorKind kind : {TensorKind::kParam, TensorKind::kGrad, TensorKind::kOptimizerState}) {
    if (Diverges(facts, kind)) return std::nullopt;
  }
  const std::vector<TensorDivergence>& buffers = facts.divergent.at(TensorKind::kBuffer);
  const bool statistics = std::all_of(buffers.begin(), buffers.end(),
                                      [](const TensorDivergence& d) { return IsRunningStatistic(d.tensor); });
  if (statistics) {
    return std::string("only buffers diverge (parameters and gradients agree): BatchNorm statistics are not "
                       "broadcast (broadcast_buffers=False?)");
  }
  return std::string("only buffers diverge (parameters and gradients agree): buffers are not synchronized across ranks");
}

// Parameters differ while the gradient reductions were issued in the step and the reduced
// gradients (recorded) agree. What the ranks differ in is then the weights themselves.
bool ParametersDifferUnderAgreeingGradients(const DivergenceFacts& facts) {
  return facts.step >= 1 && facts.ranks_compared >= 2 && facts.reductions_in_step > 0 &&
         facts.synced_gradients_recorded > 0 && Diverges(facts, TensorKind::kParam) &&
         !Diverges(facts, TensorKind::kGrad);
}

// "rank 1's parameters differ while its" / "the ranks' parameters differ while their": the odd
// ranks where every divergent parameter has a majority.
std::string WhoseParameters(const DivergenceFacts& facts) {
  std::set<int> odd;
  bool majority = true;
  for (const TensorDivergence& d : facts.divergent.at(TensorKind::kParam)) {
    odd.insert(d.odd_ranks.begin(), d.odd_ranks.end());
    majority = majority && d.has_majority;
  }
  const std::vector<int> ranks(odd.begin(), odd.end());
  if (!majority) return "the ranks' parameters";
  return RankPhrase(ranks) + (ranks.size() == 1 ? "'s" : "'") + " parameters";
}

std::string Their(const std::string& whose) { return whose.rfind("rank ", 0) == 0 ? "its" : "their"; }

// The parameters agreed at an earlier step, and differ now although the same gradients reached
// every rank: the weights changed outside the synchronized update. The records cannot tell which
// way (an edit on one rank, an optimizer of its own, a skipped all-gather of a sharded
// optimizer's update), so the line names the fact and the usual ways, not one of them.
std::optional<std::string> UpdateAfterAgreeingGradients(const DivergenceFacts& facts) {
  if (!ParametersDifferUnderAgreeingGradients(facts) || !facts.parameters_last_agreed) return std::nullopt;
  const std::string whose = WhoseParameters(facts);
  return whose + " differ while " + Their(whose) + " reduced gradients agree (" +
         std::to_string(facts.reductions_in_step) + " reducing collectives in step " + std::to_string(facts.step) +
         "; the parameters agreed at step " + std::to_string(*facts.parameters_last_agreed) +
         "): the weights changed outside the synchronized update (an edit after the optimizer step, an "
         "optimizer setting such as the learning rate or gradient clipping that differs across ranks, or a "
         "sharded optimizer's skipped all-gather)";
}

// The parameters differ at step 0, before any update (lockstep-rank records the initial state
// after its broadcast); or at the first step the ranks recorded, under agreeing reduced
// gradients: nothing shows them ever agreeing, and reduced gradients do not make weights differ.
// Either way they differed before training (a program whose trace starts after its first
// update, as the probe's does, never shows the initial state).
std::optional<std::string> InitialWeightsDiffer(const DivergenceFacts& facts) {
  if (facts.steps_recorded_before > 0 || facts.ranks_compared < 2) return std::nullopt;
  const std::string seeds =
      "(initialized with a seed that differs across ranks and never broadcast, or loaded from different "
      "checkpoints)";
  if (facts.step == 0 && Diverges(facts, TensorKind::kParam)) {
    return WhoseParameters(facts) + " differ at step 0, before any update: the initial weights differ " + seeds;
  }
  if (!ParametersDifferUnderAgreeingGradients(facts)) return std::nullopt;
  const std::string whose = WhoseParameters(facts);
  return whose + " differ at the first recorded step (" + std::to_string(facts.step) + ") while " + Their(whose) +
         " reduced gradients agree: the weights probably differed from the start " + seeds;
}

// The synced gradients differ, and every divergent tensor differs from its reference group's
// norm by a relative amount at rounding level, at least one by more than nothing: the ranks
// reduced the same values in a different floating-point order. Weights that differ by as little
// while the gradients agree were changed after the reduction: UpdateAfterAgreeingGradients.
std::optional<std::string> RoundingLevelOnly(const DivergenceFacts& facts) {
  if (!Diverges(facts, TensorKind::kGrad)) return std::nullopt;
  double worst = 0.0;
  size_t cells = 0;
  for (const auto& [kind, divergences] : facts.divergent) {
    for (const TensorDivergence& d : divergences) {
      const double rel = RelNormDiff(d);
      if (std::isnan(rel) || rel > kRoundingLevelRelDiff) return std::nullopt;
      worst = std::max(worst, rel);
      ++cells;
    }
  }
  if (cells == 0 || worst <= 0.0) return std::nullopt;
  return "differences at rounding level only (max relative norm difference " + FormatNumber(worst, 3) +
         "): probably a non-deterministic reduction (the ranks summed in different orders)";
}

}  // namespace

namespace {

bool Edited(const DivergenceFacts& facts, int rank, const std::string& tensor) {
  auto it = facts.edited_after_update.find(rank);
  return it != facts.edited_after_update.end() &&
         std::find(it->second.begin(), it->second.end(), tensor) != it->second.end();
}

bool Watched(const DivergenceFacts& facts, int rank) { return facts.edited_after_update.count(rank) != 0; }

// The one side of `d` whose every rank edited the tensor while every other rank watched and did
// not; empty otherwise.
std::vector<int> EditingSide(const DivergenceFacts& facts, const TensorDivergence& d) {
  std::vector<int> side;
  for (const DigestGroup& g : d.groups) {
    const bool all_edited = std::all_of(g.ranks.begin(), g.ranks.end(), [&](int r) { return Edited(facts, r, d.tensor); });
    const bool none_edited = std::all_of(g.ranks.begin(), g.ranks.end(),
                                         [&](int r) { return Watched(facts, r) && !Edited(facts, r, d.tensor); });
    if (all_edited && side.empty()) {
      side = g.ranks;
    } else if (!none_edited) {
      return {};
    }
  }
  return side;
}

// "rank 0 wrote 0.weight (and 2 more)".
std::string WhoEdited(const DivergenceFacts& facts, const std::vector<int>& ranks) {
  std::vector<std::string> tensors;
  for (const TensorDivergence& d : facts.divergent.at(TensorKind::kParam)) {
    if (Edited(facts, ranks.front(), d.tensor) && std::find(tensors.begin(), tensors.end(), d.tensor) == tensors.end()) {
      tensors.push_back(d.tensor);
    }
  }
  std::string what = tensors.empty() ? "its parameters" : tensors.front();
  if (tensors.size() > 1) what += " (and " + std::to_string(tensors.size() - 1) + " more)";
  return RankPhrase(ranks) + (ranks.size() == 1 ? " wrote " : " each wrote ") + what;
}

// A rank that skipped an optimizer step (a guard on its local loss, a NaN check of its own) still
// ran the backward and its all-reduce; its next record is of the step after, so from the skipped
// step on it is compared with the others' previous step. Its gradients then are theirs of one
// step later, which the records show exactly.
std::optional<std::string> SkippedStep(const DivergenceFacts& facts) {
  const std::vector<int>& ranks = facts.one_step_behind;
  if (ranks.empty()) return std::nullopt;
  const std::string s = std::to_string(facts.step);
  const bool one = ranks.size() == 1;
  return RankPhrase(ranks) + (one ? "'s" : "'") + " reduced gradients recorded as step " + s +
         " are those the other ranks reduced at step " + std::to_string(facts.step + 1) + ": " + RankPhrase(ranks) +
         (one ? " skipped" : " each skipped") + " the optimizer step of step " + s +
         " while the others took it (a skip decided on one rank's own values: its local loss or gradient "
         "check), and " + (one ? "its" : "their") + " records are numbered one step behind from there";
}

// The records of the side that edited say so: the weights were written on those ranks after
// their optimizer step and before the next forward, outside the synchronized update.
std::optional<std::string> EditedAfterUpdate(const DivergenceFacts& facts) {
  const std::vector<int> ranks = RanksThatEditedAfterUpdate(facts);
  if (ranks.empty()) return std::nullopt;
  return WhoEdited(facts, ranks) + " after " + (ranks.size() == 1 ? "its" : "their") + " optimizer step of step " +
         std::to_string(facts.step) +
         " and before the next forward, and the other ranks did not: the weights were changed outside the "
         "synchronized update on " + (ranks.size() == 1 ? "that rank" : "those ranks") +
         " (an EMA or a checkpoint copied in, an edit)";
}

}  // namespace

std::vector<int> RanksOneStepBehind(const DivergenceFacts& facts, const std::vector<const StepRecord*>& next) {
  auto grads = facts.divergent.find(TensorKind::kGrad);
  if (grads == facts.divergent.end()) return {};
  std::set<int> behind;
  for (const TensorDivergence& d : grads->second) {
    if (!d.has_majority || d.groups.size() < 2) return {};
    const int reference = d.groups.front().ranks.front();
    if (reference < 0 || static_cast<size_t>(reference) >= next.size() || next[reference] == nullptr) return {};
    const auto& tensors = next[reference]->tensors;
    auto t = std::find_if(tensors.begin(), tensors.end(),
                          [&](const TensorRecord& x) { return x.kind == TensorKind::kGrad && x.name == d.tensor; });
    if (t == tensors.end()) return {};
    for (size_t g = 1; g < d.groups.size(); ++g) {
      if (!d.groups[g].digest || !(*d.groups[g].digest == t->digest)) return {};
      behind.insert(d.groups[g].ranks.begin(), d.groups[g].ranks.end());
    }
  }
  return std::vector<int>(behind.begin(), behind.end());
}

std::vector<int> RanksThatEditedAfterUpdate(const DivergenceFacts& facts) {
  auto params = facts.divergent.find(TensorKind::kParam);
  if (params == facts.divergent.end() || facts.edited_after_update.empty()) return {};
  std::vector<int> culprit;
  for (const TensorDivergence& d : params->second) {
    const std::vector<int> side = EditingSide(facts, d);
    if (side.empty()) continue;
    if (!culprit.empty() && culprit != side) return {};
    culprit = side;
  }
  return culprit;
}

const std::vector<DivergenceCause>& DivergenceCauses() {
  static const std::vector<DivergenceCause> causes = {
      {"skipped_step", &SkippedStep},
      {"edited_after_update", &EditedAfterUpdate},
      {"no_gradient_reduction", &NoGradientReduction},
      {"sum_not_divided", &SumNotDivided},
      {"only_buffers", &OnlyBuffers},
      {"initial_weights_differ", &InitialWeightsDiffer},
      {"update_after_agreeing_gradients", &UpdateAfterAgreeingGradients},
      {"rounding_level", &RoundingLevelOnly},
  };
  return causes;
}

std::optional<std::string> ExplainDivergence(const DivergenceFacts& facts) {
  for (const DivergenceCause& cause : DivergenceCauses()) {
    if (std::optional<std::string> line = cause.explain(facts)) return line;
  }
  return std::nullopt;
}

DivergenceFacts DivergenceFactsAt(int64_t step, const std::vector<const StepRecord*>& records) {
  DivergenceFacts facts;
  facts.step = step;
  bool first = true;
  for (size_t rank = 0; rank < records.size(); ++rank) {
    const StepRecord* r = records[rank];
    if (r == nullptr) continue;
    ++facts.ranks_compared;
    const int64_t grads = std::count_if(r->tensors.begin(), r->tensors.end(), [](const TensorRecord& t) {
      return t.kind == TensorKind::kGrad && t.replicated;
    });
    facts.synced_gradients_recorded = first ? grads : std::min(facts.synced_gradients_recorded, grads);
    first = false;
    if (r->edited_after_update) facts.edited_after_update[static_cast<int>(rank)] = *r->edited_after_update;
  }
  for (TensorKind kind : kReplicatedKinds) {
    std::vector<TensorDivergence> cells = DivergencesAtStep(step, records, kind);
    if (!cells.empty()) facts.divergent[kind] = std::move(cells);
  }
  return facts;
}

void AddCollectiveFacts(const std::vector<RankTrace>& traces, DivergenceFacts* facts) {
  facts->reductions_in_step = 0;
  facts->initial_broadcast = false;
  for (const RankTrace& trace : traces) {
    for (const CollectiveRecord& c : trace.collectives) {
      // Weights are floating point; a broadcast of an int64 seed or flag is not the model's state.
      const bool floating = c.dtype.rfind("float", 0) == 0 || c.dtype == "bfloat16";
      facts->initial_broadcast = facts->initial_broadcast || (c.step == 0 && c.op == "broadcast" && floating);
      if (c.step != facts->step) continue;
      if (c.op == "all_reduce" || c.op == "reduce_scatter" || c.op == "reduce") ++facts->reductions_in_step;
    }
  }
}

}  // namespace lockstep
