#include "checkers/group_agreement_checker.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/internal/value_sides.h"

namespace lockstep {
namespace {

// The probe's names for the calls every rank of the world must make alike (probe/lockstep/_auto.py).
bool MakesGroups(const std::string& name) {
  return name == "torch.new_group" || name == "torch.new_subgroups" || name == "torch.init_device_mesh";
}

// use_local_synchronization: only the group's members make it (probe/lockstep/_groups.py).
bool MadeByMembersOnly(const std::string& comm) {
  constexpr std::string_view kLocal = " local";
  return comm.size() >= kLocal.size() && comm.compare(comm.size() - kLocal.size(), kLocal.size(), kLocal) == 0;
}

struct RankGroups {
  int rank = 0;
  bool ended_cleanly = false;
  std::vector<const DiscoveryRecord*> calls;  // in the order the rank made them
};

std::string WhatWasAsked(const DiscoveryRecord& d) { return d.comm.empty() ? d.name : d.name + " " + d.comm; }

// "torch.new_group group[0,3] (from train.py:30 in main)"
std::string Describe(const DiscoveryRecord& d) {
  return WhatWasAsked(d) + (d.where.empty() ? "" : " (from " + d.where + ")");
}

// Before the first optimizer step the probe records phase "startup": step 0 of a finding.
int64_t StepOf(const DiscoveryRecord& d) { return d.phase == "startup" ? 0 : d.step; }

std::string Ordinal(size_t index) {
  const size_t n = index + 1;
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

constexpr const char* kContract =
    "torch.distributed wants every rank of the world to make each group, members or not, in the same order "
    "and with the same ranks (or use_local_synchronization=True): a group's rendezvous is named by how many "
    "groups the rank made before it, so these ranks meet in groups they did not ask for";

}  // namespace

std::vector<Finding> GroupAgreementChecker::Check(const CheckContext& context) const {
  std::vector<RankGroups> ranks;
  size_t longest = 0;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    const RankTrace& trace = context.traces[r];
    if (!internal::HasData(trace)) continue;
    RankGroups g{static_cast<int>(r), internal::ExitedCleanly(trace), {}};
    for (const DiscoveryRecord& d : trace.discoveries) {
      if (MakesGroups(d.name) && !MadeByMembersOnly(d.comm)) g.calls.push_back(&d);
    }
    longest = std::max(longest, g.calls.size());
    ranks.push_back(std::move(g));
  }
  if (ranks.size() < 2) return {};

  for (size_t i = 0; i < longest; ++i) {
    // What each rank asked for, without where it asked: the same call from another line is alike.
    internal::ValueSides asked;
    std::vector<const DiscoveryRecord*> said;  // per side, its lowest rank's call: where it came from
    for (const RankGroups& g : ranks) {
      if (i >= g.calls.size()) continue;
      const size_t sides_before = asked.sides().size();
      asked.Add(WhatWasAsked(*g.calls[i]), g.rank);
      if (asked.sides().size() > sides_before) said.push_back(g.calls[i]);
    }
    const DiscoveryRecord* first = said.front();  // the lowest rank's, for the step
    if (asked.sides().size() > 1) {
      Finding f;
      f.checker = std::string(name());
      f.step = StepOf(*first);
      f.ranks = asked.OddRanks();
      std::vector<std::string> clauses;
      for (size_t k = 0; k < asked.sides().size(); ++k) {
        clauses.push_back(internal::RankPhrase(asked.sides()[k].ranks) + " made " + Describe(*said[k]));
      }
      f.message = "the " + Ordinal(i) + " process group each rank made differs across ranks: " +
                  internal::JoinClauses(clauses, 4) +
                  (asked.HasMajority() ? "" : " (no majority: every rank is named)") + ". " + kContract;
      f.details["group_index"] = std::to_string(i + 1);
      return {f};
    }
    // Every rank that went this far agrees; a rank that ended cleanly before it never made it.
    std::vector<int> made, never;
    for (const RankGroups& g : ranks) {
      if (i < g.calls.size()) made.push_back(g.rank);
      else if (g.ended_cleanly) never.push_back(g.rank);
    }
    if (!never.empty()) {
      internal::ValueSides presence;
      for (int r : made) presence.Add("made", r);
      for (int r : never) presence.Add("never made", r);
      Finding f;
      f.checker = std::string(name());
      f.step = StepOf(*first);
      f.ranks = presence.OddRanks();
      f.message = internal::RankPhrase(made) + " made a " + Ordinal(i) + " process group, " + Describe(*first) +
                  ", which " + internal::RankPhrase(never) + " never made (ended cleanly after " +
                  std::to_string(i) + (i == 1 ? " group" : " groups") + ")" +
                  (presence.HasMajority() ? "" : " (no majority: every rank is named)") + ". " + kContract;
      f.details["group_index"] = std::to_string(i + 1);
      return {f};
    }
  }
  return {};
}

}  // namespace lockstep
