// The command lines and environments the launcher starts, built as plain data so that each
// launcher kind (mpirun, srun, local, none) is unit-tested without starting anything.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cuda_driver_version.h"
#include "harness/core/status.h"
#include "harness/launcher/launch_spec.h"

namespace lockstep {

// Names the per-rank log files of mpirun's ranks; the wrapper script reads it.
inline constexpr const char* kLogDirEnv = "LOCKSTEP_LOG_DIR";

struct LaunchCommand {
  std::vector<std::string> argv;           // argv[0]: the program, resolved to a path
  std::map<std::string, std::string> env;  // set on top of the launching process's environment
  std::filesystem::path output;            // stdout and stderr of the started process
  std::string ToString() const;            // shell-quoted, for reports and logs
};

std::filesystem::path RankLogPath(const std::filesystem::path& log_dir, int rank);
std::filesystem::path RankTracePath(const std::filesystem::path& trace_dir, int rank);
std::filesystem::path LauncherLogPath(const std::filesystem::path& log_dir);

// The last `max_bytes` of a file (all of a shorter one; empty when it cannot be read): what a
// message or a report quotes of a rank's log, which a long run can grow to gigabytes.
std::string ReadFileTail(const std::filesystem::path& p, size_t max_bytes);

// The environment every rank gets whatever the launcher: spec.env, the expected world size and
// the launch id.
std::map<std::string, std::string> CommonRankEnv(const LaunchSpec& spec);

// mpirun -np N --oversubscribe --bind-to none -x ... <mpirun_args> /bin/sh -c <redirect> prog args.
// Each rank's output goes to log_dir/rank-<r>.log through a tiny /bin/sh wrapper that redirects
// and then execs the program (same pid, so mpirun's exit reports stay exact); mpirun's own
// messages go to log_dir/launcher.log, where the crash parser reads them.
LaunchCommand MpirunCommand(const LaunchSpec& spec, const std::string& mpirun);

// A job step of a multi-host launch inside allocation `job_id` (host_group.h), on `nodelist`.
struct SrunStep {
  std::string job_id;
  std::string nodelist;    // "node0,node1"
  int nodes = 1;
  int ranks_per_node = 0;  // 0: as Slurm spreads the tasks
  std::string mpi = "none";  // srun's --mpi plugin: pmix for MPI ranks, none for gloo and NCCL
  std::string name;        // --job-name, lockstep-<launch id>-<what>
};

// The ranks as the tasks of one step: srun --jobid J --overlap --nodelist L -N n -n N
// [--ntasks-per-node K] --mpi=M --kill-on-bad-exit=1 --cpu-bind=none --job-name S
// --output=log_dir/rank-%t.log <mpirun_args> prog args. log_dir is each node's own (the stage).
LaunchCommand SrunStepCommand(const LaunchSpec& spec, const std::string& srun, const SrunStep& step);

// torchrun on each node, started as one task per node of a step: srun ... --ntasks-per-node=1
// torchrun --nnodes n --nproc-per-node K --rdzv-backend c10d --rdzv-endpoint E (the first node,
// which hosts the rendezvous) --rdzv-id <launch id> --max-restarts 0 --no-python
// /bin/sh -c <redirect> prog args: torchrun's agent starts its node's K ranks with RANK,
// LOCAL_RANK, LOCAL_WORLD_SIZE, WORLD_SIZE; each rank's output to log_dir/rank-<RANK>.log.
LaunchCommand TorchrunPerNodeCommand(const LaunchSpec& spec, const std::string& srun, const SrunStep& step,
                                     const std::string& torchrun, const std::string& rdzv_endpoint);

// torchrun --nnodes 1 --nproc-per-node N --max-restarts 0 --master-addr A --master-port P
// --no-python /bin/sh -c <redirect> prog args: torchrun starts the N ranks with its own
// environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...), the program as given (no python
// prepended), each rank's output to log_dir/rank-<RANK>.log; torchrun's own to launcher.log. No
// elastic restart: a failed rank ends the job, as under mpirun. MASTER_ADDR and MASTER_PORT of
// spec.env, when set, win over 127.0.0.1 and `master_port`.
LaunchCommand TorchrunCommand(const LaunchSpec& spec, const std::string& torchrun, int master_port);

// accelerate launch --multi_gpu --num_processes N --num_machines 1 --mixed_precision no
// --dynamo_backend no --max_restarts 0 --main_process_ip A --main_process_port P --no_python
// /bin/sh -c <redirect> prog args: Accelerate's multi-process launcher (torchrun underneath; on a
// machine without GPUs the ranks run on CPU), every setting on the command line so that no
// `accelerate config` file is needed; otherwise as TorchrunCommand.
LaunchCommand AccelerateCommand(const LaunchSpec& spec, const std::string& accelerate, int master_port);

// The ACCELERATE_USE_CPU each rank under `accelerate launch` gets (accelerate itself overwrites
// it with "False" under --multi_gpu): the user's own (spec.env, then this process's environment),
// else "true" on a host without a CUDA driver (`cuda_driver` as CudaDriverVersion() says it), so
// that the ranks train distributed on CPU with gloo instead of each alone; nullopt: left to
// accelerate (a GPU host).
std::optional<std::string> AccelerateRanksUseCpu(const LaunchSpec& spec, const std::string& cuda_driver = CudaDriverVersion());

// One torchrun-style local rank: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT (spec.env may override MASTER_ADDR and MASTER_PORT), and OMP_NUM_THREADS=1 where
// LocalSetsOmpNumThreads says so.
LaunchCommand LocalRankCommand(const LaunchSpec& spec, int rank, int master_port);

// Whether the local launcher sets OMP_NUM_THREADS=1 for its ranks, as torchrun does: more than one
// rank on this host and the variable set neither in `env` (the ranks' extra environment) nor in
// this process's. Without it every rank starts one OpenMP thread per core and N ranks on this
// host run several times slower than under torchrun. kOmpNumThreadsNotice is torchrun's notice.
bool LocalSetsOmpNumThreads(LauncherKind kind, int ranks, const std::map<std::string, std::string>& env);
inline constexpr const char* kOmpNumThreadsNotice =
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
    "overloaded, please further tune the variable for optimal performance in your application as needed.";

// kNone: the rank program once, as this process's rank, inside the job we already are in.
LaunchCommand InJobRankCommand(const LaunchSpec& spec, int rank);

// The rank of this process in an enclosing job: RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK,
// SLURM_PROCID, PMI_RANK, in that order; 0 outside any job.
int RankFromEnvironment();

// `name` itself when it contains a '/', otherwise the first match on `path_var` (a PATH value);
// only regular files we may execute qualify.
std::optional<std::filesystem::path> FindExecutable(const std::string& name, const std::string& path_var);

// mpirun from $MPIEXEC, then PATH, then the one CMake found at build time.
Result<std::filesystem::path> FindMpirun();


// The store rendezvous of gloo and nccl under mpirun and srun: the launcher gives the ranks their
// rank and world size, but rank 0 must also serve a store at MASTER_ADDR:MASTER_PORT. Adds both
// to spec.env unless spec.env or this process's environment already sets them: `port` (a free
// one here) and 127.0.0.1 for a job on this host, `host` (this host's name) when mpirun is given
// hosts (-H, --host, --hostfile) or under srun, where rank 0 runs on the first node, this one.
void AddStoreRendezvousEnv(LaunchSpec& spec, const std::string& host, int port);

std::string ShellQuote(const std::string& word);

}  // namespace lockstep
