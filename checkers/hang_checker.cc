#include "checkers/hang_checker.h"

#include <algorithm>
#include <map>
#include <set>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::JoinCapped;
using internal::RankPhrase;

struct OpenCollective {
  std::string group;
  uint64_t seq = 0;
  std::vector<int> waiting;             // ranks inside it
  const CollectiveRecord* record = nullptr;  // the first waiting rank's record
  std::vector<int> behind;              // members that never began it
  // Where the waiting ranks called it (trace 2.6), when every one of them says the same place.
  std::string where;
  bool one_where = true;
};

// ", called at train.py:30 in main" after a collective, where its record says; "" where not.
std::string CalledAt(const std::string& where) { return where.empty() ? "" : ", called at " + where; }

std::string Describe(const CollectiveRecord& c) {
  std::string s = c.op + "(";
  if (!c.dtype.empty() || c.count != 0) s += c.dtype + ", " + std::to_string(c.count);
  return s + ")";
}

// Where a rank stands: "last collective world seq 7 (step 2), last recorded step 2".
std::string WhereIs(const RankTrace& t, const std::string& group) {
  if (!internal::HasData(t)) return "no trace";
  std::string s;
  const CollectiveRecord* last_in_group = nullptr;
  for (const CollectiveRecord& c : t.collectives) {
    if (c.group == group && (!last_in_group || c.seq > last_in_group->seq)) last_in_group = &c;
  }
  if (last_in_group) {
    s += "its last collective in " + group + " was seq " + std::to_string(last_in_group->seq) + " (step " +
         std::to_string(last_in_group->step) + CalledAt(last_in_group->where) + ")";
  } else {
    s += "it began no collective in " + group;
  }
  auto last = internal::LastStep(t);
  s += last ? ", last recorded step " + std::to_string(*last) : ", no step recorded";
  return s;
}

}  // namespace

std::vector<Finding> HangChecker::Check(const CheckContext& context) const {
  if (context.launch.ending != LaunchEnding::kHang) return {};
  const std::vector<RankTrace>& traces = context.traces;
  const int world = internal::WorldSize(context.scenario, traces);

  // Group members: world is every rank; a sub-group is every rank that recorded it.
  std::map<std::string, std::set<int>> members;
  for (int r = 0; r < world; ++r) members["world"].insert(r);
  // rank -> group -> highest seq begun
  std::vector<std::map<std::string, uint64_t>> last_begun(static_cast<size_t>(world));
  std::map<std::pair<std::string, uint64_t>, OpenCollective> open;
  std::set<int> waiting_anywhere;
  for (size_t r = 0; r < traces.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (!internal::HasData(traces[r])) continue;
    for (const CollectiveRecord& c : traces[r].collectives) {
      members[c.group].insert(rank);
      auto [it, inserted] = last_begun[r].emplace(c.group, c.seq);
      if (!inserted) it->second = std::max(it->second, c.seq);
      if (c.end_s) continue;
      OpenCollective& o = open[{c.group, c.seq}];
      o.group = c.group;
      o.seq = c.seq;
      o.waiting.push_back(rank);
      if (!o.record) {
        o.record = &c;
        o.where = c.where;
      } else if (c.where != o.where) {
        o.one_where = false;
      }
      waiting_anywhere.insert(rank);
    }
  }

  Finding f;
  f.checker = std::string(name());
  if (open.empty()) {
    // Nothing in flight in the traces (a rank stuck outside any collective while the others had
    // not reached one yet, or no trace at all): fall back to what the launcher saw.
    std::vector<int> stalled = context.launch.stalled_ranks;
    if (stalled.empty()) {
      for (int r = 0; r < world; ++r) {
        if (static_cast<size_t>(r) >= traces.size() || !traces[r].footer) stalled.push_back(r);
      }
    }
    std::sort(stalled.begin(), stalled.end());
    f.ranks = stalled;
    std::vector<std::string> where;
    std::optional<int64_t> step;
    for (int r : stalled) {
      if (static_cast<size_t>(r) >= traces.size()) { where.push_back("rank " + std::to_string(r) + ": no trace"); continue; }
      auto last = internal::LastStep(traces[r]);
      where.push_back("rank " + std::to_string(r) + ": " + (last ? "last recorded step " + std::to_string(*last) : "no step recorded"));
      const int64_t in_step = last ? *last + 1 : 0;
      step = step ? std::min(*step, in_step) : in_step;
    }
    f.step = step;
    f.message = "hang: no rank is inside a collective in its trace; the launcher saw " + RankPhrase(stalled) +
                " stop making progress (" + JoinCapped(where, 8) + ")";
    if (!context.launch.message.empty()) f.message += "; launcher: " + context.launch.message;
    return {f};
  }

  for (auto& [key, o] : open) {
    std::set<int> inside(o.waiting.begin(), o.waiting.end());
    for (int m : members[o.group]) {
      if (inside.count(m)) continue;
      // Every member is below `world`, so last_begun has an entry for it.
      auto it = last_begun[m].find(o.group);
      const bool began_it = it != last_begun[m].end() && it->second >= o.seq;
      if (!began_it) o.behind.push_back(m);
    }
  }
  // The collective most ranks wait in; on a tie, the one entered first.
  const OpenCollective* primary = nullptr;
  for (const auto& [key, o] : open) {
    if (!primary || o.waiting.size() > primary->waiting.size() ||
        (o.waiting.size() == primary->waiting.size() && o.record->start_s < primary->record->start_s)) {
      primary = &o;
    }
  }

  // Hung ranks: behind in some open collective and not waiting in any (those wait on someone).
  std::set<int> hung, behind_all;
  for (const auto& [key, o] : open) {
    for (int r : o.behind) {
      behind_all.insert(r);
      if (!waiting_anywhere.count(r)) hung.insert(r);
    }
  }
  if (hung.empty()) {
    // A sub-group's members are only known from the records, so a rank that hung before its first
    // collective in that group is invisible there. It is still the rank that is in no collective
    // at all and did not exit cleanly while the others wait.
    for (int r = 0; r < world; ++r) {
      const bool exited = static_cast<size_t>(r) < traces.size() && traces[r].footer.has_value();
      if (!waiting_anywhere.count(r) && !exited) hung.insert(r);
    }
  }

  f.step = primary->record->step;
  f.details["group"] = primary->group;
  f.details["collective_seq"] = std::to_string(primary->seq);
  f.details["waiting_ranks"] = internal::JoinRanks(primary->waiting);
  const std::string called_at = primary->one_where ? primary->where : "";
  if (!called_at.empty()) f.details["called_at"] = called_at;
  const std::string waited = primary->group + " seq " + std::to_string(primary->seq) + " (" +
                             Describe(*primary->record) + ", step " + std::to_string(primary->record->step) +
                             CalledAt(called_at) + ")";
  std::string msg = RankPhrase(primary->waiting) + (primary->waiting.size() == 1 ? " waits" : " wait") + " in " + waited;
  if (!hung.empty()) {
    f.ranks.assign(hung.begin(), hung.end());
    std::vector<std::string> where;
    for (int r : f.ranks) {
      where.push_back("rank " + std::to_string(r) + ": " +
                      (static_cast<size_t>(r) < traces.size() ? WhereIs(traces[r], primary->group) : "no trace"));
      auto last = static_cast<size_t>(r) < traces.size() ? internal::LastStep(traces[r]) : std::nullopt;
      if (last) f.details["rank" + std::to_string(r) + "_last_step"] = std::to_string(*last);
    }
    msg += "; " + RankPhrase(f.ranks) + " never reached it (" + JoinCapped(where, 8) + ")";
  } else if (!behind_all.empty()) {
    // Everyone behind is itself waiting elsewhere: ranks wait on each other in different
    // collectives, which is an ordering problem (see collective_order).
    f.ranks.assign(behind_all.begin(), behind_all.end());
    std::vector<std::string> elsewhere;
    for (const auto& [key, o] : open) {
      elsewhere.push_back(RankPhrase(o.waiting) + " in " + o.group + " seq " + std::to_string(o.seq));
    }
    msg += "; " + RankPhrase(f.ranks) + " never reached it but wait in other collectives (" +
           JoinCapped(elsewhere, 8) + "): the ranks wait on each other";
  } else {
    f.ranks = primary->waiting;
    msg += "; every member entered it but it never completed (a backend hang, or mismatched arguments: see "
           "collective_order)";
  }
  if (open.size() > 1) f.details["open_collectives"] = std::to_string(open.size());
  f.message = "hang: " + msg;
  return {f};
}

}  // namespace lockstep
