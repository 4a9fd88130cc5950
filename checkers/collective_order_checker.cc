#include "checkers/collective_order_checker.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "checkers/collective_order_cause.h"
#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::JoinCapped;
using internal::RankPhrase;

std::string FieldDiff(const CollectiveRecord& a, const CollectiveRecord& b) {
  std::vector<std::string> d;
  if (a.op != b.op) d.push_back("op " + a.op + " vs " + b.op);
  if (a.dtype != b.dtype) d.push_back("dtype " + a.dtype + " vs " + b.dtype);
  if (a.count != b.count) d.push_back("count " + std::to_string(a.count) + " vs " + std::to_string(b.count));
  if (a.root != b.root) d.push_back("root " + std::to_string(a.root) + " vs " + std::to_string(b.root));
  if (a.reduce != b.reduce) d.push_back("reduce " + (a.reduce.empty() ? "none" : a.reduce) + " vs " + (b.reduce.empty() ? "none" : b.reduce));
  return JoinCapped(d, d.size());
}

// The ranks that agree at one seq: one record stands for all of them; null = no collective.
struct SeqGroup {
  const CollectiveRecord* record = nullptr;
  std::vector<int> ranks;
};

// Where in the program each side issued its collective at the difference (trace 2.6: the probe
// records the line of a collective called from Python), "rank 0: train.py:24 in main; ranks 1,2:
// train.py:27 in main"; "" where no side's record says.
std::string CalledAt(const std::vector<SeqGroup>& sides) {
  std::vector<std::string> at;
  for (const SeqGroup& side : sides) {
    if (side.record && !side.record->where.empty()) at.push_back(RankPhrase(side.ranks) + ": " + side.record->where);
  }
  return internal::JoinClauses(at, at.size());
}

bool CompletedStep(const RankTrace& trace, int64_t step) {
  return step >= 0 && !trace.steps.empty() && trace.steps.back().step >= step;
}

// One side of the difference, as the cause rules read it: its first rank's collectives in the
// group from `seq` on.
CollectiveSide SideOf(const SeqGroup& group, const std::map<uint64_t, const CollectiveRecord*>& seqs, uint64_t seq,
                      const RankTrace& trace) {
  CollectiveSide side;
  side.ranks = group.ranks;
  for (auto it = seqs.lower_bound(seq); it != seqs.end() && side.from_seq.size() < kCollectivesLookedAt; ++it) {
    side.from_seq.push_back(it->second);
  }
  side.exited = internal::ExitedCleanly(trace);
  side.last_step = internal::LastStep(trace);
  return side;
}

}  // namespace

std::vector<Finding> CollectiveOrderChecker::Check(const CheckContext& context) const {
  const std::vector<RankTrace>& traces = context.traces;
  // group -> rank -> seq -> record
  std::map<std::string, std::map<int, std::map<uint64_t, const CollectiveRecord*>>> groups;
  for (size_t r = 0; r < traces.size(); ++r) {
    if (!internal::HasData(traces[r])) continue;
    groups["world"][static_cast<int>(r)];  // every rank with a trace is in world
    for (const CollectiveRecord& c : traces[r].collectives) groups[c.group][static_cast<int>(r)].emplace(c.seq, &c);
  }

  std::vector<Finding> findings;
  for (const auto& [group, by_rank] : groups) {
    uint64_t end_seq = 0;
    for (const auto& [rank, seqs] : by_rank) {
      if (!seqs.empty()) end_seq = std::max(end_seq, seqs.rbegin()->first + 1);
    }
    for (uint64_t seq = 0; seq < end_seq; ++seq) {
      std::vector<SeqGroup> at;  // in rank order of first appearance
      int compared = 0;
      // The step this seq belongs to, on the ranks that issued it.
      int64_t seq_step = -1;
      for (const auto& [rank, seqs] : by_rank) {
        auto it = seqs.find(seq);
        if (it != seqs.end() && (seq_step < 0 || it->second->step < seq_step)) seq_step = it->second->step;
      }
      for (const auto& [rank, seqs] : by_rank) {
        auto it = seqs.find(seq);
        const CollectiveRecord* rec = it == seqs.end() ? nullptr : it->second;
        // A sequence that stops because the rank died or hung says nothing about order, unless the
        // rank finished the step the others issued this collective in: then it skipped it (and
        // the others' extra collective is what hung the job). So too a rank that stopped on an
        // error (its footer says so): most often its collective failed because a peer died, while
        // a rank of another group, not yet waiting on the dead one, had begun the next collective.
        if (!rec && !internal::ExitedCleanly(traces[rank]) && !CompletedStep(traces[rank], seq_step)) continue;
        ++compared;
        auto g = std::find_if(at.begin(), at.end(), [&](const SeqGroup& x) {
          return (x.record == nullptr) == (rec == nullptr) && (!rec || SameCollective(*x.record, *rec));
        });
        if (g == at.end()) at.push_back(SeqGroup{rec, {rank}});
        else g->ranks.push_back(rank);
      }
      if (at.size() < 2) continue;

      std::stable_sort(at.begin(), at.end(), [](const SeqGroup& a, const SeqGroup& b) { return a.ranks.size() > b.ranks.size(); });
      const bool majority = at.front().ranks.size() * 2 > static_cast<size_t>(compared);
      const SeqGroup& ref = at.front();
      Finding f;
      f.checker = std::string(name());
      std::vector<std::string> parts;
      std::set<int> odd;
      for (size_t g = 1; g < at.size(); ++g) {
        odd.insert(at[g].ranks.begin(), at[g].ranks.end());
        const SeqGroup& o = at[g];
        if (o.record && ref.record) {
          parts.push_back(RankPhrase(o.ranks) + (o.ranks.size() == 1 ? " runs " : " run ") +
                          CollectiveSignature(*o.record) + " but " + RankPhrase(ref.ranks) +
                          (ref.ranks.size() == 1 ? " runs " : " run ") + CollectiveSignature(*ref.record) + " (" +
                          FieldDiff(*o.record, *ref.record) + ")");
          f.details.emplace("diff", FieldDiff(*o.record, *ref.record));
        } else if (o.record) {
          parts.push_back(RankPhrase(o.ranks) + (o.ranks.size() == 1 ? " runs" : " run") + " an extra collective " +
                          CollectiveSignature(*o.record) + " at step " + std::to_string(o.record->step) + "; " +
                          RankPhrase(ref.ranks) + " issued only " + std::to_string(seq) + " in group " + group +
                          (internal::ExitedCleanly(traces[ref.ranks.front()]) ? " and exited" : " and went on past that step"));
        } else {
          parts.push_back(RankPhrase(o.ranks) + " issued only " + std::to_string(seq) + " collectives in group " +
                          group +
                          (internal::ExitedCleanly(traces[o.ranks.front()])
                               ? std::string(" and exited")
                               : " and went on past step " + std::to_string(ref.record->step)) +
                          ", but " + RankPhrase(ref.ranks) +
                          (ref.ranks.size() == 1 ? " runs " : " run ") + CollectiveSignature(*ref.record) +
                          " at step " + std::to_string(ref.record->step));
        }
      }
      f.ranks.assign(odd.begin(), odd.end());
      // The step where the odd rank went its own way; the majority's when the odd rank has none.
      const CollectiveRecord* where = at[1].record ? at[1].record : ref.record;
      f.step = where->step;
      f.message = "group " + group + " seq " + std::to_string(seq) + " (step " + std::to_string(where->step) +
                  "): " + JoinCapped(parts, parts.size());
      if (!majority) {
        f.details["majority"] = "none";
        f.message += "; no majority among " + std::to_string(compared) + " ranks";
        const bool one_side_extra = at.size() == 2 && (at[0].record == nullptr) != (at[1].record == nullptr);
        if (one_side_extra) {
          // The records tell: one side issued a collective the other never did.
          const SeqGroup& extra = at[0].record ? at[0] : at[1];
          f.ranks = extra.ranks;
          f.details["named"] = "the side that issued the extra collective";
          f.message += ": " + RankPhrase(extra.ranks) + " issued the extra collective and " +
                       (extra.ranks.size() == 1 ? "is" : "are") + " named";
        } else {
          // Nothing says which side is wrong: every rank that disagrees is named.
          std::set<int> all;
          for (const SeqGroup& g : at) all.insert(g.ranks.begin(), g.ranks.end());
          f.ranks.assign(all.begin(), all.end());
          f.message += ": the records cannot tell which side is wrong, so every rank that disagrees is named";
        }
      }
      // The odd sides first, as the message names them.
      std::vector<SeqGroup> sides(at.begin() + 1, at.end());
      sides.push_back(ref);
      const std::string called_at = CalledAt(sides);
      if (!called_at.empty()) {
        f.message += ". Called at: " + called_at;
        f.details["called_at"] = called_at;
      }
      f.details["group"] = group;
      f.details["collective_seq"] = std::to_string(seq);
      CollectiveMismatchFacts facts{group, seq, {}, {}};
      facts.reference = SideOf(ref, by_rank.at(ref.ranks.front()), seq, traces[ref.ranks.front()]);
      facts.odd = SideOf(at[1], by_rank.at(at[1].ranks.front()), seq, traces[at[1].ranks.front()]);
      f.cause = ExplainCollectiveMismatch(facts).value_or("");
      findings.push_back(std::move(f));
      break;  // after the first difference the sequences are misaligned: one finding per group
    }
  }
  return findings;
}

}  // namespace lockstep
