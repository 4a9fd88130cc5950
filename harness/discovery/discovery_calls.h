// The calls that count as discovery, in one table: what each is, and whether a process may make
// it only once (docs/CHECKERS.md#discovery_count says who records each). The scenario loader validates `expect.discovery` names against
// it, the discovery_count checker reads the once-per-process rule from it, and
// docs/CHECKERS.md#discovery_count shows it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

struct DiscoveryCall {
  std::string_view name;         // "mpi.comm_split"
  std::string_view what;         // what the program called (a finding's details say it)
  bool once_per_process = false; // a second call, even at start-up, is a finding
  // Undoes what a discovery call built (a group destroyed): never a finding by itself, at any
  // phase (a clean program tears down at its end), but counted in the finding of a rank that
  // builds groups after start-up: groups made and destroyed in a loop.
  bool teardown = false;
};

const std::vector<DiscoveryCall>& DiscoveryCallTable();
// The entry of `name`, or null when it is not a discovery call.
const DiscoveryCall* FindDiscoveryCall(std::string_view name);
// `unknown discovery call "x"; expected one of: lockstep.topology, mpi.init, ...`
std::string UnknownDiscoveryCallMessage(std::string_view name);

}  // namespace lockstep
