// The calls that count as discovery, in one table: what each is, which of the four kinds it is,
// and whether a process may make it only once (docs/CHECKERS.md#discovery_count says who records
// each, and why each has its kind). The scenario loader validates `expect.discovery` names against
// it, the discovery_count checker reads the once-per-process rule from it, and
// docs/CHECKERS.md#discovery_count shows it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

// What a call does to the process's view of the world, which decides how discovery_count judges
// it. Re-discovery is building that view again; asking a question it already answers, or a
// library materializing its part of it once, at its first use, is not.
enum class DiscoveryKind {
  // Builds the view: who is there, and the communicators, groups and meshes over them. Belongs to
  // start-up; after it, it is the view built again (the multi-slice bug).
  kBuild,
  // One-time initialization at the first use of a thing that start-up already decided on (the
  // CUDA driver's first cuInit; the NCCL communicator of a group, made at the group's first
  // collective): allowed at any phase, once per thing. Doing it again is re-discovery.
  kFirstUse,
  // Asks a question the view already answers (the device count: the runtime and the driver
  // answer it from the enumeration done at cuInit). Never a finding; a finding of its rank
  // lists those made after start-up, as evidence.
  kQuery,
  // Undoes what a build made (a group destroyed): never a finding by itself, at any phase (a
  // clean program tears down at its end), but counted in the finding of a rank that builds
  // groups after start-up: groups made and destroyed in a loop.
  kTeardown,
};

struct DiscoveryCall {
  std::string_view name;         // "mpi.comm_split"
  std::string_view what;         // what the program called (a finding's details say it)
  bool once_per_process = false; // a second call, even at start-up, is a finding
  DiscoveryKind kind = DiscoveryKind::kBuild;
};

const std::vector<DiscoveryCall>& DiscoveryCallTable();
// The entry of `name`, or null when it is not a discovery call.
const DiscoveryCall* FindDiscoveryCall(std::string_view name);
// `unknown discovery call "x"; expected one of: lockstep.topology, mpi.init, ...`
std::string UnknownDiscoveryCallMessage(std::string_view name);

}  // namespace lockstep
