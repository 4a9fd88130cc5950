// Each launcher kind in one place: its name, whether lockstep starts the ranks itself, and how
// its processes are planned (which command lines, which rank each runs). launcher.cc's watch
// loop asks this table and never switches on the kind; launch_command.h builds the lines.
#pragma once

#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/launch_spec.h"

namespace lockstep {

// The processes one launch starts.
struct LaunchPlan {
  std::vector<LaunchCommand> commands;
  std::vector<int> command_rank;  // the rank each command runs; -1: a job launcher that runs them all
  std::string summary;            // the command line report.json shows
};

struct LauncherKindInfo {
  LauncherKind kind;
  const char* name;
  // lockstep starts each rank itself and sees how it exits (local, none); otherwise one job
  // launcher process (mpirun, srun, torchrun, accelerate) starts them and says how they died.
  bool direct;
  // The rank program is looked up on this host's PATH; srun's is resolved on the compute nodes.
  bool resolves_program_here;
  // Where its ranks can run on several hosts (host_group.h): never, always (srun: its nodes
  // may not see --out), or when given nodes (torchrun per node, mpirun inside an allocation).
  enum class OnNodes { kNever, kAlways, kWhenGivenNodes } on_nodes;
  // The commands for `spec` on this host (its program already resolved where
  // resolves_program_here); nullptr for a kind that always runs on nodes. May add the ranks'
  // rendezvous to spec.env. `path_var`: the PATH the launcher programs are found on; `host`:
  // this host's name.
  Result<LaunchPlan> (*plan)(LaunchSpec& spec, const std::string& path_var, const std::string& host);
};

// Whether `spec`'s ranks run on the nodes of a Slurm allocation, through node agents.
bool RunsOnNodes(const LaunchSpec& spec);

const LauncherKindInfo& KindInfo(LauncherKind kind);

// The plan for `spec` on this host: the rank program resolved (an error naming it when it cannot
// be run), then the kind's own plan.
Result<LaunchPlan> PlanLaunch(LaunchSpec& spec, const std::string& host);

}  // namespace lockstep
