#include "checkers/collective_order_cause.h"

#include <algorithm>
#include <tuple>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::JoinCapped;
using internal::RankPhrase;

// The same call in the same step: where two sequences meet again after a difference, the steps
// they are in must agree too (a training loop's collectives repeat every step, so the calls
// alone would match a sequence shifted by a whole step).
bool SameCallInStep(const CollectiveRecord& a, const CollectiveRecord& b) {
  return a.step == b.step && SameCollective(a, b);
}

const CollectiveRecord* At(const CollectiveSide& side, size_t i) {
  return i < side.from_seq.size() ? side.from_seq[i] : nullptr;
}

// "rank 0" / "ranks 1,2"
std::string Who(const CollectiveSide& side) { return RankPhrase(side.ranks); }

std::string Signatures(const std::vector<const CollectiveRecord*>& records) {
  std::vector<std::string> s;
  for (const CollectiveRecord* r : records) s.push_back(CollectiveSignature(*r));
  return JoinCapped(s, 3);
}

std::string Collectives(size_t n) { return std::to_string(n) + (n == 1 ? " collective" : " collectives"); }

constexpr std::string_view kSomeRanksOnly =
    ": a collective called on some ranks only (a call under a condition that differs across ranks, e.g. "
    "`if rank == 0:`)";

// The fewest records `ahead` issued before its sequence goes on as `behind`'s does, where the
// records show it: every later record both sides have is the same collective, and at least one
// is compared, in the same step. Nothing when the sequences never meet within what was looked at.
std::optional<size_t> MeetsAfter(const CollectiveSide& ahead, const CollectiveSide& behind) {
  if (behind.from_seq.empty()) return std::nullopt;
  for (size_t k = 1; k < ahead.from_seq.size(); ++k) {
    const size_t overlap = std::min(ahead.from_seq.size() - k, behind.from_seq.size());
    bool same = true;
    for (size_t i = 0; i < overlap && same; ++i) same = SameCallInStep(*ahead.from_seq[k + i], *behind.from_seq[i]);
    if (same) return k;
  }
  return std::nullopt;
}

// The records `ahead` issued past the end of `behind`'s sequence in steps `behind` completed:
// `behind` stopped issuing collectives in this group but went on (or exited) past them.
std::vector<const CollectiveRecord*> IssuedWhereTheOtherStopped(const CollectiveSide& ahead,
                                                                const CollectiveSide& behind) {
  std::vector<const CollectiveRecord*> extra;
  if (!behind.from_seq.empty() || !behind.last_step) return extra;
  for (const CollectiveRecord* r : ahead.from_seq) {
    if (r->step > *behind.last_step) break;
    extra.push_back(r);
  }
  return extra;
}

// One side exited cleanly after its last step while the other went on to a later step and kept
// issuing collectives: the ranks ran different numbers of steps.
std::optional<std::string> UnevenSteps(const CollectiveMismatchFacts& facts) {
  for (const auto& [ended, other] : {std::tie(facts.odd, facts.reference), std::tie(facts.reference, facts.odd)}) {
    const CollectiveRecord* next = At(other, 0);
    if (!ended.from_seq.empty() || !ended.exited || !ended.last_step || next == nullptr) continue;
    if (next->step <= *ended.last_step) continue;
    return Who(ended) + " exited after step " + std::to_string(*ended.last_step) + " while " + Who(other) +
           " went on to step " + std::to_string(next->step) + " and issued " + CollectiveSignature(*next) +
           ": the ranks ran different numbers of steps (probably uneven inputs: a rank with more batches than "
           "the others; DistributedSampler(drop_last=True) or DDP's join() keeps them even)";
  }
  return std::nullopt;
}

// The next two collectives are the same on both sides, in the other order.
std::optional<std::string> Reordered(const CollectiveMismatchFacts& facts) {
  const CollectiveRecord* o0 = At(facts.odd, 0);
  const CollectiveRecord* o1 = At(facts.odd, 1);
  const CollectiveRecord* r0 = At(facts.reference, 0);
  const CollectiveRecord* r1 = At(facts.reference, 1);
  if (!o0 || !o1 || !r0 || !r1 || !SameCallInStep(*o0, *r1) || !SameCallInStep(*o1, *r0)) return std::nullopt;
  return "the ranks issued the same collectives in another order at step " + std::to_string(o0->step) + " (" +
         Who(facts.odd) + ": " + CollectiveSignature(*o0) + " first; " + Who(facts.reference) + ": " +
         CollectiveSignature(*r0) + " first): collectives issued in an order that differs across ranks (e.g. "
         "over a set, or parameters registered in another order)";
}

// The odd ranks issued collectives the others did not, and then went on as the others did (or
// the others stopped issuing in this group past them).
std::optional<std::string> ExtraCollectives(const CollectiveMismatchFacts& facts) {
  if (std::optional<size_t> k = MeetsAfter(facts.odd, facts.reference)) {
    const std::vector<const CollectiveRecord*> extra(facts.odd.from_seq.begin(), facts.odd.from_seq.begin() + *k);
    return Who(facts.odd) + " issued " + Collectives(*k) + " the others did not, in step " +
           std::to_string(extra.front()->step) + " (" + Signatures(extra) + "), then went on as they did" +
           std::string(kSomeRanksOnly);
  }
  const std::vector<const CollectiveRecord*> extra = IssuedWhereTheOtherStopped(facts.odd, facts.reference);
  if (extra.empty()) return std::nullopt;
  return Who(facts.odd) + " issued " + Collectives(extra.size()) + " the others did not, in step " +
         std::to_string(extra.front()->step) + " (" + Signatures(extra) + "), a step " + Who(facts.reference) +
         " completed without them" + std::string(kSomeRanksOnly);
}

// The odd ranks skipped collectives the others issued, and then went on as they did (or issued
// nothing more in this group past steps they completed).
std::optional<std::string> SkippedCollectives(const CollectiveMismatchFacts& facts) {
  if (std::optional<size_t> k = MeetsAfter(facts.reference, facts.odd)) {
    const std::vector<const CollectiveRecord*> skipped(facts.reference.from_seq.begin(),
                                                       facts.reference.from_seq.begin() + *k);
    return Who(facts.odd) + " skipped " + Collectives(*k) + " the others issued in step " +
           std::to_string(skipped.front()->step) + " (" + Signatures(skipped) + "), then went on as they did" +
           std::string(kSomeRanksOnly);
  }
  const std::vector<const CollectiveRecord*> skipped = IssuedWhereTheOtherStopped(facts.reference, facts.odd);
  if (skipped.empty()) return std::nullopt;
  return Who(facts.odd) + " skipped " + Collectives(skipped.size()) + " the others issued in step " +
         std::to_string(skipped.front()->step) + " (" + Signatures(skipped) + "), a step " +
         (facts.odd.ranks.size() == 1 ? "it" : "they") + " completed" +
         std::string(kSomeRanksOnly);
}

// The same collective with other arguments, and then the same sequence again: one call whose
// tensors (count, dtype) or reduce op or root differ across ranks.
std::optional<std::string> DifferentArguments(const CollectiveMismatchFacts& facts) {
  const CollectiveRecord* o = At(facts.odd, 0);
  const CollectiveRecord* r = At(facts.reference, 0);
  if (!o || !r || o->op != r->op || SameCollective(*o, *r)) return std::nullopt;
  const CollectiveRecord* o_next = At(facts.odd, 1);
  const CollectiveRecord* r_next = At(facts.reference, 1);
  if (!o_next || !r_next || !SameCallInStep(*o_next, *r_next)) return std::nullopt;
  const std::string where = " at step " + std::to_string(o->step) + ", then went on alike";
  if (o->count != r->count || o->dtype != r->dtype) {
    return "the ranks call " + o->op + " with tensors of another " +
           (o->count != r->count ? (o->dtype != r->dtype ? "size and dtype" : "size") : "dtype") + where +
           ": the tensors they pass differ (a model, a gradient bucket layout or a precision that differs across "
           "ranks)";
  }
  return "the ranks call " + o->op + " with another " + (o->reduce != r->reduce ? "reduce op" : "root") + where +
         ": an argument computed differently on some ranks";
}

// Different collectives at the same seq, and nothing after them that tells an extra call from
// a skipped, reordered or differently called one.
std::optional<std::string> DifferentCodePaths(const CollectiveMismatchFacts& facts) {
  const CollectiveRecord* o = At(facts.odd, 0);
  const CollectiveRecord* r = At(facts.reference, 0);
  if (!o || !r || SameCollective(*o, *r)) return std::nullopt;
  const std::string step = std::to_string(std::min(o->step, r->step));
  const bool nothing_after = facts.odd.from_seq.size() == 1 && facts.reference.from_seq.size() == 1;
  const std::string which =
      nothing_after ? "; the traces stop there (the job hung or died), before saying which" : std::string();
  if (o->op == r->op) {
    return "the ranks call " + o->op + " with other arguments at step " + step +
           ": a collective called on some ranks only (e.g. a metric all-reduce under `if rank == 0:`) meeting "
           "another, or the same call with tensors that differ across ranks" +
           which;
  }
  return "the ranks took different code paths at step " + step +
         ": a collective called on some ranks only (e.g. a metric sync or a log under `if rank == 0:`) or the "
         "same collectives in another order" +
         which;
}

}  // namespace

std::string CollectiveSignature(const CollectiveRecord& c) {
  std::string s = c.op + "(";
  if (!c.dtype.empty() || c.count != 0) s += c.dtype + ", " + std::to_string(c.count);
  if (!c.reduce.empty()) s += ", " + c.reduce;
  if (c.root >= 0) s += ", root " + std::to_string(c.root);
  return s + ")";
}

bool SameCollective(const CollectiveRecord& a, const CollectiveRecord& b) {
  // An all_to_all's ranks may each send a different total (a MoE dispatch): where both recorded
  // their split sizes, what must agree is each sender's split against its receiver's, which
  // collective_args checks, not the totals.
  const bool splits = !a.in_splits.empty() && !b.in_splits.empty();
  return std::tie(a.op, a.dtype, a.root, a.reduce) == std::tie(b.op, b.dtype, b.root, b.reduce) &&
         (splits || a.count == b.count);
}

const std::vector<CollectiveMismatchCause>& CollectiveMismatchCauses() {
  static const std::vector<CollectiveMismatchCause> causes = {
      {"uneven_steps", &UnevenSteps},
      {"reordered_collectives", &Reordered},
      {"extra_collectives", &ExtraCollectives},
      {"skipped_collectives", &SkippedCollectives},
      {"different_arguments", &DifferentArguments},
      {"different_code_paths", &DifferentCodePaths},
  };
  return causes;
}

std::optional<std::string> ExplainCollectiveMismatch(const CollectiveMismatchFacts& facts) {
  for (const CollectiveMismatchCause& cause : CollectiveMismatchCauses()) {
    if (std::optional<std::string> line = cause.explain(facts)) return line;
  }
  return std::nullopt;
}

}  // namespace lockstep
