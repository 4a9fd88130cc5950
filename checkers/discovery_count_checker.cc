#include "checkers/discovery_count_checker.h"

#include <algorithm>
#include <map>
#include <set>

#include "checkers/internal/check_util.h"
#include "harness/discovery/discovery_calls.h"

namespace lockstep {
namespace {

constexpr const char* kNcclCommInit = "nccl.comm_init";

// The group builds of torch.distributed whose NCCL communicator ProcessGroupNCCL makes lazily, at
// the group's first collective (unless init_process_group was given a device_id): each may
// account for one communicator made after start-up over ranks that already have one.
bool BuildsALazyGroup(const std::string& name) {
  return name == "torch.new_group" || name == "torch.new_subgroups" || name == "torch.init_device_mesh";
}

// "mpi.comm_split at step 3 in attention_forward (from model.py:41 in forward)"
std::string Describe(const DiscoveryRecord& d) {
  std::string text = d.name + " at step " + std::to_string(d.step) + " in " + (d.phase.empty() ? "?" : d.phase);
  if (!d.where.empty()) text += " (from " + d.where + ")";
  return text;
}

DiscoveryKind KindOf(const std::string& name) {
  const DiscoveryCall* known = FindDiscoveryCall(name);
  // A name the table does not know (a newer recorder's) builds, as every call did before kinds.
  return known != nullptr ? known->kind : DiscoveryKind::kBuild;
}

// "nccl:00ab.../4" of "nccl:00ab.../4 (name)": the communicator, the same on each of its ranks
// (the NCCL profiler plugin names it by NCCL's commHash). Empty when the record names none.
std::string CommunicatorOf(const DiscoveryRecord& d) { return d.comm.substr(0, d.comm.find(' ')); }

// "4" of "nccl:00ab.../4": how many ranks NCCL says it has ("" when the name has no size).
std::string SizeOf(const std::string& comm) {
  const size_t slash = comm.rfind('/');
  return slash == std::string::npos ? "" : comm.substr(slash + 1);
}

// Communicator -> the ranks whose traces initialized it: its members, as far as the traces tell.
using Members = std::map<std::string, std::set<int>>;

Members CommunicatorMembers(const std::vector<RankTrace>& traces) {
  Members members;
  for (size_t r = 0; r < traces.size(); ++r) {
    for (const DiscoveryRecord& d : traces[r].discoveries) {
      if (d.name != kNcclCommInit) continue;
      const std::string comm = CommunicatorOf(d);
      if (!comm.empty()) members[comm].insert(static_cast<int>(r));
    }
  }
  return members;
}

std::string RankList(const std::set<int>& ranks) {
  std::vector<std::string> items;
  for (int r : ranks) items.push_back(std::to_string(r));
  return "[" + internal::JoinCapped(items, items.size()) + "]";
}

// A communicator's init on one rank is its first use, allowed at any phase, unless it comes after
// start-up and the rank made that communicator before, or made one over the same ranks already
// and has no group built at start-up left to account for it. Returns why it is too many, or "".
class CommunicatorJudge {
 public:
  explicit CommunicatorJudge(const Members& members) : members_(members) {}

  std::string Judge(const DiscoveryRecord& d) {
    if (d.name != kNcclCommInit) {
      if (d.phase == "startup" && BuildsALazyGroup(d.name)) ++lazy_groups_;
      return "";
    }
    const std::string comm = CommunicatorOf(d);
    if (comm.empty()) return "";  // no name to tell one communicator from another
    const auto found = members_.find(comm);
    const std::set<int> ranks = found == members_.end() ? std::set<int>{} : found->second;
    std::string why;
    if (d.phase == "startup") {
      // Start-up builds what it likes (an eager world communicator and its splits).
    } else if (std::find(made_.begin(), made_.end(), comm) != made_.end()) {
      why = "the same communicator (" + comm + ") initialized again";
    } else {
      for (const std::string& earlier : made_) {
        const auto e = members_.find(earlier);
        if (e == members_.end() || e->second != ranks || SizeOf(earlier) != SizeOf(comm)) {
          continue;
        }
        if (lazy_groups_ > 0) {
          --lazy_groups_;  // the communicator of a group built at start-up, made at its first collective
        } else {
          why = "a second communicator for ranks " + RankList(ranks) + " (" + comm + "; " + earlier + " was first)";
        }
        break;
      }
    }
    made_.push_back(comm);
    return why;
  }

 private:
  const Members& members_;
  std::vector<std::string> made_;
  int lazy_groups_ = 0;
};

// The calls of one rank's trace that break the rules, in call order, each with why.
std::vector<std::pair<const DiscoveryRecord*, std::string>> CallsTooMany(const RankTrace& trace,
                                                                         const std::map<std::string, int>& allowed,
                                                                         const Members& members) {
  std::vector<std::pair<const DiscoveryRecord*, std::string>> out;
  std::map<std::string, int> seen;
  CommunicatorJudge communicators(members);
  for (const DiscoveryRecord& d : trace.discoveries) {
    const int n = ++seen[d.name];
    const std::string again = communicators.Judge(d);  // sees every call: its bookkeeping needs them all
    const auto allowance = allowed.find(d.name);
    if (allowance != allowed.end()) {
      if (n > allowance->second) {
        out.emplace_back(&d, "allowed " + std::to_string(allowance->second) + (allowance->second == 1 ? " time" : " times"));
      }
      continue;
    }
    const DiscoveryCall* known = FindDiscoveryCall(d.name);
    const bool once = known != nullptr && known->once_per_process;
    switch (KindOf(d.name)) {
      case DiscoveryKind::kQuery:     // listed beside a finding as evidence (below), never one
      case DiscoveryKind::kTeardown:  // counted beside the calls that build (below)
        break;
      case DiscoveryKind::kFirstUse:
        if (once && n > 1) {
          out.emplace_back(&d, "once per process");
        } else if (!again.empty()) {
          out.emplace_back(&d, again);
        }
        break;
      case DiscoveryKind::kBuild:
        if (d.phase != "startup") {
          out.emplace_back(&d, "after start-up");
        } else if (once && n > 1) {
          out.emplace_back(&d, "once per process");
        }
        break;
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
  const Members members = CommunicatorMembers(context.traces);
  for (size_t r = 0; r < context.traces.size(); ++r) {
    const RankTrace& t = context.traces[r];
    if (!internal::HasData(t)) continue;
    const auto bad = CallsTooMany(t, context.scenario.discovery_allowed, members);
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
    // and destroys groups (Megatron-LM PR #6902 leaked about 20 per cycle). Queries after start-up
    // (the device count a re-run topology discovery asked) go to the details as evidence.
    int destroyed = 0;
    std::vector<std::string> queries;
    for (const DiscoveryRecord& d : t.discoveries) {
      if (d.phase == "startup") continue;
      const DiscoveryKind kind = KindOf(d.name);
      if (kind == DiscoveryKind::kTeardown) ++destroyed;
      if (kind == DiscoveryKind::kQuery) queries.push_back(Describe(d) + ", call " + std::to_string(d.call));
    }
    std::string part = "rank " + std::to_string(rank) + ": " + internal::JoinCapped(calls, 5);
    if (destroyed > 0) {
      part += "; and " + std::to_string(destroyed) + (destroyed == 1 ? " group" : " groups") +
              " destroyed after start-up (groups made and destroyed in a loop)";
      f.details["rank" + std::to_string(rank) + "_destroyed"] = std::to_string(destroyed);
    }
    if (!queries.empty()) f.details["rank" + std::to_string(rank) + "_queries"] = internal::JoinCapped(queries, 20);
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
