// The native discovery recorders a rank process can load (docs/CHECKERS.md#discovery_count): the
// PMPI wrappers (liblockstep_pmpi.so, by LD_PRELOAD), the NCCL profiler plugin
// (NCCL_PROFILER_PLUGIN) and the CUPTI subscriber (CUDA_INJECTION64_PATH). They are built into
// <build>/lib beside the process log they feed, and reach a program lockstep did not build only
// through its environment: this is the one place that environment is made, for `lockstep exec`
// and for lockstep-rank.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness/core/status.h"

namespace lockstep {

inline constexpr const char* kPmpiRecorderFile = "liblockstep_pmpi.so";
inline constexpr const char* kNcclRecorderFile = "liblockstep_nccl_profiler.so";
inline constexpr const char* kCudaRecorderFile = "liblockstep_cupti.so";
// The library the exec wrapper puts first in LD_PRELOAD (the rank's own LD_PRELOAD is kept after it).
inline constexpr const char* kPreloadEnv = "LOCKSTEP_PRELOAD";

struct NativeRecorders {
  bool mpi = false;   // MPI_Init, MPI_Comm_split & co.
  bool nccl = false;  // NCCL communicators and collectives
  bool cuda = false;  // cuInit, cudaGetDeviceCount, cuDeviceGetCount
};

// <program_dir>/../lib: where the build puts them beside bin/.
std::filesystem::path RecorderDir(const std::filesystem::path& program_dir);
// Those whose library is in `dir`.
NativeRecorders BuiltRecorders(const std::filesystem::path& dir);

// `--recorders SPEC`: "auto" (each one built, mpi only when `preload_mpi` says the ranks are MPI
// programs of the MPI lockstep links), "none", or a comma-separated list of mpi, nccl, cuda
// (each must be built: InvalidArgument names the missing library otherwise).
Result<NativeRecorders> ChooseRecorders(const std::string& spec, const NativeRecorders& built, bool preload_mpi);

// Whether `mpirun --version` says it is Open MPI's, the MPI liblockstep_pmpi.so is built against.
// The PMPI wrappers are preloaded by default only then: preloading Open MPI into a program that
// uses no MPI, or another MPI (an MPICH mpirun and an mpi4py built for it), would break it.
bool IsOpenMpiLauncher(const std::filesystem::path& mpirun);

// The variables that make a process load `chosen` from `dir`, added to `env`. A variable the
// environment lockstep runs in already sets (the user's own NCCL profiler or CUDA injection) is
// left to it: that recorder is then off, and a note in `notes` says so.
void AddRecorderEnv(const NativeRecorders& chosen, const std::filesystem::path& dir,
                    std::map<std::string, std::string>& env, std::vector<std::string>* notes = nullptr);

// A POSIX sh fragment that puts $LOCKSTEP_PRELOAD (when set) before the rank's LD_PRELOAD and
// execs "$@": the library is preloaded into the program only, not into mpirun or the shell.
extern const char* const kPreloadThenExec;

}  // namespace lockstep
