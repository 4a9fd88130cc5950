// What a launch is asked to do, as plain data: the launcher kind, the ranks and their program,
// where their traces and logs go, the timeouts. The bottom of harness/launcher/: everything else
// of the folder (the kinds' table, the commands, the watch, the judgement of the end) reads it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/core/name_table.h"

namespace lockstep {

enum class LauncherKind {
  kMpirun,  // mpirun -np N (Open MPI)
  kSrun,    // srun -n N (Slurm): the ranks as tasks of a job step, on the allocation's nodes
  kLocal,   // torchrun-style: N local processes with RANK, WORLD_SIZE, MASTER_ADDR, ...
  kNone,    // already inside a job (e.g. under srun): one local child, this process's rank
  // PyTorch's own launchers, one process that starts the N local ranks itself: torchrun
  // --nproc-per-node N (no elastic restarts), and Hugging Face's `accelerate launch`, which
  // starts them through torchrun's machinery. Both are looked up on PATH.
  kTorchrun,
  kAccelerate,
};
template <> const NameTable<LauncherKind>& NamesOf<LauncherKind>();  // flags, report.json's context.launcher
const char* ToString(LauncherKind kind);

// Every process of a launch carries LOCKSTEP_LAUNCH_ID=<id> in its environment, so that the
// launcher (and each node's agent) finds, and tests can assert the absence of, processes that
// left its process tree.
inline constexpr const char* kLaunchIdEnv = "LOCKSTEP_LAUNCH_ID";
// The world size the ranks must see; the rank program checks it (plain srun under Open MPI 5
// silently starts N singletons).
inline constexpr const char* kExpectWorldSizeEnv = "LOCKSTEP_EXPECT_WORLD_SIZE";

// Several hosts (host_group.h): under srun, and under torchrun or mpirun given `nodes`, the ranks
// run on the nodes of a Slurm allocation (this process's, or one asked for and given back), each
// node's agent streaming their traces and logs to the launch's trace_dir and log_dir here.
struct HostPlacement {
  int nodes = 0;                            // how many nodes (0: as many as the ranks need, up to the allocation's)
  int ranks_per_node = 0;                   // 0: as Slurm spreads them
  std::filesystem::path node_dir = "/tmp";  // a folder local to each node, for the launch's stage there
  double node_timeout_s = 10.0;             // a host silent this long is lost
};

struct LaunchSpec {
  LauncherKind kind = LauncherKind::kMpirun;
  int ranks = 1;
  std::vector<std::string> rank_command;  // program + args, run once per rank
  std::filesystem::path trace_dir;        // the ranks' rank-<r>.trace, as the launcher reads them
  std::filesystem::path log_dir;          // rank-<r>.log per rank, launcher.log for mpirun/srun
  // No trace progress for hang_timeout_s is a hang when the ranks wait on each other: every
  // unfinished rank is inside a collective or uses no CPU (stall_judgement.h). While a rank
  // outside any collective computes (an evaluation, a checkpoint), only quiet_timeout_s applies.
  double hang_timeout_s = 60.0;           // <= 0: off
  double quiet_timeout_s = 1800.0;        // <= 0: off
  // Start-up (process start, communicator, model, initial broadcast) is timed apart from
  // progress: until every rank's trace shows its step-0 record, only this limit applies.
  double startup_timeout_s = 300.0;       // <= 0: off
  double timeout_s = 0.0;                 // whole launch (<= 0: no limit)
  std::map<std::string, std::string> env;  // extra environment for the ranks
  std::vector<std::string> mpirun_args;    // extra launcher args (mpirun or srun), before the program
  std::string launch_id;                   // the LOCKSTEP_LAUNCH_ID marker; empty: a random one
  double kill_grace_s = 2.0;               // SIGTERM, then SIGKILL after this long
  HostPlacement hosts;
};

// Called on the launching thread whenever a rank's trace shows a newer step.
using ProgressCallback = std::function<void(int rank, int64_t step)>;

}  // namespace lockstep
