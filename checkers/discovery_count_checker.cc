#include "checkers/discovery_count_checker.h"

#include <algorithm>
#include <map>

#include "checkers/internal/check_util.h"
#include "harness/discovery/discovery_calls.h"

namespace lockstep {
namespace {

// "mpi.comm_split at step 3 in attention_forward (from model.py:41 in forward)"
std::string Describe(const DiscoveryRecord& d) {
  std::string text = d.name + " at step " + std::to_string(d.step) + " in " + (d.phase.empty() ? "?" : d.phase);
  if (!d.where.empty()) text += " (from " + d.where + ")";
  return text;
}

// The calls of one rank's trace that break the rules, in call order, each with why.
std::vector<std::pair<const DiscoveryRecord*, std::string>> CallsTooMany(const RankTrace& trace,
                                                                         const std::map<std::string, int>& allowed) {
  std::vector<std::pair<const DiscoveryRecord*, std::string>> out;
  std::map<std::string, int> seen;
  for (const DiscoveryRecord& d : trace.discoveries) {
    const int n = ++seen[d.name];
    const auto allowance = allowed.find(d.name);
    if (allowance != allowed.end()) {
      if (n > allowance->second) {
        out.emplace_back(&d, "allowed " + std::to_string(allowance->second) + (allowance->second == 1 ? " time" : " times"));
      }
      continue;
    }
    const DiscoveryCall* known = FindDiscoveryCall(d.name);
    if (known != nullptr && known->teardown) continue;  // counted beside the calls that build (below)
    if (d.phase != "startup") {
      out.emplace_back(&d, "after start-up");
    } else if (known != nullptr && known->once_per_process && n > 1) {
      out.emplace_back(&d, "once per process");
    }
  }
  return out;
}

}  // namespace

std::vector<Finding> DiscoveryCountChecker::Check(const CheckContext& context) const {
  Finding f;
  f.checker = std::string(name());
  std::vector<std::string> parts;
  std::vector<std::string> names;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    const RankTrace& t = context.traces[r];
    if (!internal::HasData(t)) continue;
    const auto bad = CallsTooMany(t, context.scenario.discovery_allowed);
    if (bad.empty()) continue;
    const int rank = static_cast<int>(r);
    f.ranks.push_back(rank);
    std::vector<std::string> calls;
    for (const auto& [d, why] : bad) {
      calls.push_back(Describe(*d) + ", call " + std::to_string(d->call) + " of the process, " + why);
      f.step = f.step ? std::min(*f.step, d->step) : d->step;
      if (std::find(names.begin(), names.end(), d->name) == names.end()) {
        names.push_back(d->name);
        if (const DiscoveryCall* known = FindDiscoveryCall(d->name)) f.details["call " + d->name] = std::string(known->what);
      }
    }
    // Groups destroyed after start-up beside groups built after it: the churn of a loop that makes
    // and destroys groups (Megatron-LM PR #6902 leaked about 20 per cycle).
    int destroyed = 0;
    for (const DiscoveryRecord& d : t.discoveries) {
      const DiscoveryCall* known = FindDiscoveryCall(d.name);
      if (known != nullptr && known->teardown && d.phase != "startup") ++destroyed;
    }
    std::string part = "rank " + std::to_string(rank) + ": " + internal::JoinCapped(calls, 5);
    if (destroyed > 0) {
      part += "; and " + std::to_string(destroyed) + (destroyed == 1 ? " group" : " groups") +
              " destroyed after start-up (groups made and destroyed in a loop)";
      f.details["rank" + std::to_string(rank) + "_destroyed"] = std::to_string(destroyed);
    }
    parts.push_back(part);
    f.details["rank" + std::to_string(rank) + "_calls"] = internal::JoinCapped(calls, 100);
    f.details["rank" + std::to_string(rank) + "_count"] = std::to_string(t.discoveries.size());
  }
  if (f.ranks.empty()) return {};
  f.message = "discovery ran again: " + internal::JoinCapped(parts, 8);
  f.details["calls"] = internal::JoinCapped(names, names.size());
  return {f};
}

}  // namespace lockstep
