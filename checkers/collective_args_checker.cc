#include "checkers/collective_args_checker.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::JoinClauses;
using internal::RankPhrase;

// How many disagreeing pairs one message spells out; the rest are counted.
constexpr size_t kPairsShown = 4;

// One rank's record of a collective, placed by its rank in the group.
struct Member {
  int world_rank = 0;
  const CollectiveRecord* record = nullptr;
};

std::string List(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string Elements(int64_t n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); }

}  // namespace

std::vector<Finding> CollectiveArgsChecker::Check(const CheckContext& context) const {
  // group -> seq -> group rank -> the member that recorded it
  std::map<std::string, std::map<uint64_t, std::map<int, Member>>> groups;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    if (!internal::HasData(context.traces[r])) continue;
    for (const CollectiveRecord& c : context.traces[r].collectives) {
      if (c.group_rank < 0 || c.in_splits.empty() || c.out_splits.empty()) continue;
      groups[c.group][c.seq].emplace(c.group_rank, Member{static_cast<int>(r), &c});
    }
  }

  std::vector<Finding> findings;
  for (const auto& [group, seqs] : groups) {
    for (const auto& [seq, members] : seqs) {
      // One member is enough for its own pair: a rank whose split to itself is not what it
      // expects from itself (rank 1 of all_to_all_split_mismatch.py) is wrong whatever its peers did.
      std::vector<std::string> pairs;
      std::set<int> named;
      std::set<int> involved;  // group ranks whose splits the message shows
      for (const auto& [i, sender] : members) {
        for (const auto& [j, receiver] : members) {
          const std::vector<int64_t>& sends = sender.record->in_splits;
          const std::vector<int64_t>& expects = receiver.record->out_splits;
          if (static_cast<size_t>(j) >= sends.size() || static_cast<size_t>(i) >= expects.size()) continue;
          const int64_t sent = sends[static_cast<size_t>(j)];
          const int64_t expected = expects[static_cast<size_t>(i)];
          if (sent == expected) continue;
          const std::string from = RankPhrase({sender.world_rank});
          pairs.push_back(i == j ? from + " sends " + Elements(sent) + " to itself but expects " + std::to_string(expected)
                                 : from + " sends " + Elements(sent) + " to " + RankPhrase({receiver.world_rank}) +
                                       ", which expects " + std::to_string(expected) + " from it");
          named.insert(sender.world_rank);
          named.insert(receiver.world_rank);
          involved.insert(i);
          involved.insert(j);
        }
      }
      if (pairs.empty()) continue;
      const CollectiveRecord& first = *members.begin()->second.record;
      std::vector<std::string> shown;
      for (int g : involved) {
        const Member& m = members.at(g);
        shown.push_back(RankPhrase({m.world_rank}) + " in_splits " + List(m.record->in_splits) + " out_splits " +
                        List(m.record->out_splits));
      }
      Finding f;
      f.checker = std::string(name());
      f.step = first.step;
      f.ranks.assign(named.begin(), named.end());
      f.message = "group " + group + " seq " + std::to_string(seq) + " (step " + std::to_string(first.step) + "): " +
                  first.op + " split sizes disagree between sender and receiver: " + JoinClauses(pairs, kPairsShown) +
                  " (" + JoinClauses(shown, shown.size()) + "; in elements, by rank in the group)";
      f.message += "; both ranks of each pair are named: the records cannot tell whose count is wrong";
      f.details["group"] = group;
      f.details["collective_seq"] = std::to_string(seq);
      f.details["op"] = first.op;
      f.details["pairs"] = std::to_string(pairs.size());
      findings.push_back(std::move(f));
      break;  // the group's first: what follows a failed exchange says no more
    }
  }
  return findings;
}

}  // namespace lockstep
