// The Slurm allocation a multi-host launch runs in (docs/LAUNCHER.md, "Several hosts"): the one
// this process is inside (sbatch, salloc, an interactive srun), or one lockstep asks for from a
// login node (`salloc --no-shell`) and gives back (`scancel`) however the launch ends. Its job
// steps (the agents, the ranks) are named lockstep-<launch id>-<what>, so that they can be found
// and cancelled inside an allocation that is not ours.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> nodes;  // in Slurm's order: the first runs task 0 of a step
  bool ours = false;               // lockstep asked for it: it gives it back
};

// Slurm's hostlist syntax, expanded in order: "node[0-2,5],gpu[07-08],login" -> node0, node1,
// node2, node5, gpu07, gpu08, login (zero padding kept). An error names what it cannot read.
Result<std::vector<std::string>> ExpandHostlist(const std::string& list);

// The allocation this process runs in, from SLURM_JOB_ID and SLURM_JOB_NODELIST of `env`;
// nullopt outside one.
std::optional<SlurmAllocation> AllocationFromEnvironment(const std::map<std::string, std::string>& env);
// The same from this process's environment.
std::optional<SlurmAllocation> CurrentAllocation();

// Asks Slurm for an allocation: `salloc --no-shell --job-name NAME -n RANKS [-N NODES]
// [--ntasks-per-node K] [extra...]`, waiting at most `timeout_s` for it to be granted.
Result<SlurmAllocation> Allocate(const std::string& name, int ranks, int nodes, int ranks_per_node,
                                 const std::vector<std::string>& extra, double timeout_s);

// Whether Slurm still runs the allocation (squeue says RUNNING): false once it was cancelled
// (scancel), ran past its time limit or ended; true when squeue cannot be asked (nothing known).
bool AllocationRunning(const SlurmAllocation& allocation);

// Gives back an allocation that is ours (scancel); for one that is not, cancels only this
// launch's job steps (named `step_prefix`*). Best effort: the launch is ending.
void ReleaseAllocation(const SlurmAllocation& allocation, const std::string& step_prefix);

// The srun MPI plugin for the ranks: $LOCKSTEP_SRUN_MPI when set, "pmix" when `srun --mpi=list`
// offers it, else "none" (gloo and NCCL need none).
std::string SrunMpiPlugin(const std::string& srun);

// Runs argv[0] (looked up on PATH) and returns its exit status and what it printed on stdout and
// stderr, or an error when it cannot be started or does not end within `timeout_s` (then killed).
struct CommandOutput {
  int exit_code = -1;
  std::string output;
};
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, double timeout_s);

}  // namespace lockstep
