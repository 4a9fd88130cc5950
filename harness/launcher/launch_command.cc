#include "harness/launcher/launch_command.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool IsExecutableFile(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return ::access(p.c_str(), X_OK) == 0;
}

// Redirects the rank's output to its own file, then becomes the rank program (exec keeps the
// pid, so mpirun's "process rank 1 ... exited on signal 9" still names the program itself).
// The rank comes from whichever launcher variable is set; Open MPI sets OMPI_COMM_WORLD_RANK.
constexpr const char* kRedirectScript =
    "exec \"$0\" \"$@\" >\"$LOCKSTEP_LOG_DIR/rank-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}.log\" 2>&1";

// The same for a rank that torchrun (or accelerate launch) started: torchrun names it in RANK.
constexpr const char* kTorchrunRedirectScript = "exec \"$0\" \"$@\" >\"$LOCKSTEP_LOG_DIR/rank-${RANK:-0}.log\" 2>&1";

// accelerate launch sets ACCELERATE_USE_CPU in each rank's environment from its own --cpu, which
// with --multi_gpu is never set (--cpu would start one process): the ranks' wrapper sets it again
// from LOCKSTEP_ACCELERATE_USE_CPU (AccelerateRanksUseCpu).
constexpr const char* kAccelerateRedirectScript =
    "if [ -n \"$LOCKSTEP_ACCELERATE_USE_CPU\" ]; then export ACCELERATE_USE_CPU=\"$LOCKSTEP_ACCELERATE_USE_CPU\"; fi; "
    "exec \"$0\" \"$@\" >\"$LOCKSTEP_LOG_DIR/rank-${RANK:-0}.log\" 2>&1";
constexpr const char* kAccelerateUseCpuEnv = "LOCKSTEP_ACCELERATE_USE_CPU";

// Where torchrun's ranks meet: spec.env's MASTER_ADDR and MASTER_PORT when given, else this host
// and a port free a moment ago.
std::string MasterAddr(const LaunchSpec& spec) {
  return spec.env.count("MASTER_ADDR") ? spec.env.at("MASTER_ADDR") : std::string("127.0.0.1");
}
std::string MasterPort(const LaunchSpec& spec, int master_port) {
  return spec.env.count("MASTER_PORT") ? spec.env.at("MASTER_PORT") : std::to_string(master_port);
}

// What follows the launcher's own flags: the program as given, each rank's output to its log.
void AppendRedirectedRankCommand(const LaunchSpec& spec, LaunchCommand& cmd) {
  cmd.argv.push_back("/bin/sh");
  cmd.argv.push_back("-c");
  cmd.argv.push_back(kTorchrunRedirectScript);
  cmd.argv.insert(cmd.argv.end(), spec.rank_command.begin(), spec.rank_command.end());
}

}  // namespace

std::string ShellQuote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of(
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
                           std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string LaunchCommand::ToString() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [k, v] : env) {
    os << (first ? "" : " ") << k << "=" << ShellQuote(v);
    first = false;
  }
  for (const auto& a : argv) {
    os << (first ? "" : " ") << ShellQuote(a);
    first = false;
  }
  return os.str();
}

std::string ReadFileTail(const std::filesystem::path& p, size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(from);
  std::string out(static_cast<size_t>(size - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::filesystem::path RankLogPath(const std::filesystem::path& log_dir, int rank) {
  return log_dir / ("rank-" + std::to_string(rank) + ".log");
}

std::filesystem::path RankTracePath(const std::filesystem::path& trace_dir, int rank) {
  return trace_dir / TraceFileName(rank);
}

std::filesystem::path LauncherLogPath(const std::filesystem::path& log_dir) { return log_dir / "launcher.log"; }

std::map<std::string, std::string> CommonRankEnv(const LaunchSpec& spec) {
  std::map<std::string, std::string> env = spec.env;
  env[kExpectWorldSizeEnv] = std::to_string(spec.ranks);
  if (!spec.launch_id.empty()) env[kLaunchIdEnv] = spec.launch_id;
  return env;
}

LaunchCommand MpirunCommand(const LaunchSpec& spec, const std::string& mpirun) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.env[kLogDirEnv] = spec.log_dir.string();
  cmd.argv = {mpirun, "-np", std::to_string(spec.ranks), "--oversubscribe", "--bind-to", "none"};
  for (const auto& [name, value] : cmd.env) {
    (void)value;
    cmd.argv.push_back("-x");
    cmd.argv.push_back(name);
  }
  // Open MPI hands OMPI_MCA_* variables to the ranks itself, so this one needs no -x. ob1 skips
  // the UCX probe that costs ~200 ms per start on machines without InfiniBand.
  if (!cmd.env.count("OMPI_MCA_pml") && std::getenv("OMPI_MCA_pml") == nullptr) {
    cmd.env["OMPI_MCA_pml"] = "ob1";
  }
  cmd.argv.insert(cmd.argv.end(), spec.mpirun_args.begin(), spec.mpirun_args.end());
  cmd.argv.push_back("/bin/sh");
  cmd.argv.push_back("-c");
  cmd.argv.push_back(kRedirectScript);
  cmd.argv.insert(cmd.argv.end(), spec.rank_command.begin(), spec.rank_command.end());
  cmd.output = LauncherLogPath(spec.log_dir);
  return cmd;
}

namespace {

// srun's own part of a step's command line.
std::vector<std::string> SrunStepArgs(const std::string& srun, const SrunStep& step) {
  return {srun,
          "--jobid=" + step.job_id,
          // The agents' step runs beside this one on the same nodes.
          "--overlap",
          "--nodelist=" + step.nodelist,
          "--nodes=" + std::to_string(step.nodes),
          "--cpu-bind=none",
          "--job-name=" + step.name};
}

}  // namespace

LaunchCommand SrunStepCommand(const LaunchSpec& spec, const std::string& srun, const SrunStep& step) {
  LaunchCommand cmd;
  // srun exports the whole environment to the tasks by default (--export=ALL).
  cmd.env = CommonRankEnv(spec);
  cmd.argv = SrunStepArgs(srun, step);
  cmd.argv.push_back("--ntasks=" + std::to_string(spec.ranks));
  if (step.ranks_per_node > 0) cmd.argv.push_back("--ntasks-per-node=" + std::to_string(step.ranks_per_node));
  cmd.argv.push_back("--mpi=" + step.mpi);
  // Like mpirun: one failing task ends the step instead of leaving the others waiting.
  cmd.argv.push_back("--kill-on-bad-exit=1");
  // %t is the task id (the rank); stderr follows --output when --error is not given.
  cmd.argv.push_back("--output=" + (spec.log_dir / "rank-%t.log").string());
  cmd.argv.insert(cmd.argv.end(), spec.mpirun_args.begin(), spec.mpirun_args.end());
  cmd.argv.insert(cmd.argv.end(), spec.rank_command.begin(), spec.rank_command.end());
  cmd.output = LauncherLogPath(spec.log_dir);
  return cmd;
}

LaunchCommand TorchrunPerNodeCommand(const LaunchSpec& spec, const std::string& srun, const SrunStep& step,
                                     const std::string& torchrun, const std::string& rdzv_endpoint) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.env[kLogDirEnv] = spec.log_dir.string();
  const int per_node = step.ranks_per_node > 0 ? step.ranks_per_node : (spec.ranks + step.nodes - 1) / step.nodes;
  cmd.argv = SrunStepArgs(srun, step);
  cmd.argv.insert(cmd.argv.end(), {"--ntasks-per-node=1", "--kill-on-bad-exit=1", "--mpi=none"});
  cmd.argv.insert(cmd.argv.end(), spec.mpirun_args.begin(), spec.mpirun_args.end());
  // The c10d rendezvous numbers the nodes as their agents join; the endpoint's node hosts it.
  cmd.argv.insert(cmd.argv.end(),
                  {torchrun, "--nnodes",
                   std::to_string(step.nodes), "--nproc-per-node", std::to_string(per_node), "--rdzv-backend", "c10d",
                   "--rdzv-endpoint", rdzv_endpoint, "--rdzv-id", spec.launch_id, "--max-restarts", "0",
                   "--no-python"});
  AppendRedirectedRankCommand(spec, cmd);
  cmd.output = LauncherLogPath(spec.log_dir);
  return cmd;
}

LaunchCommand TorchrunCommand(const LaunchSpec& spec, const std::string& torchrun, int master_port) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.env[kLogDirEnv] = spec.log_dir.string();
  cmd.argv = {torchrun,        "--nnodes",      "1",
              "--nproc-per-node", std::to_string(spec.ranks),
              // A failed rank ends the job (the others are stopped), never a restart of them all.
              "--max-restarts", "0",
              "--master-addr", MasterAddr(spec),
              "--master-port", MasterPort(spec, master_port),
              "--no-python"};
  AppendRedirectedRankCommand(spec, cmd);
  cmd.output = LauncherLogPath(spec.log_dir);
  return cmd;
}

LaunchCommand AccelerateCommand(const LaunchSpec& spec, const std::string& accelerate, int master_port) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.env[kLogDirEnv] = spec.log_dir.string();
  // --multi_gpu is Accelerate's name for "N processes through torchrun" (its --cpu alone starts
  // one process). Without a GPU, an Accelerator that was not built with cpu=True would see no
  // device and run each rank alone, undistributed: ACCELERATE_USE_CPU makes it MULTI_CPU (gloo).
  if (const std::optional<std::string> use_cpu = AccelerateRanksUseCpu(spec)) cmd.env[kAccelerateUseCpuEnv] = *use_cpu;
  cmd.argv = {accelerate,         "launch",
              "--multi_gpu",      "--num_processes", std::to_string(spec.ranks),
              "--num_machines",   "1",
              "--mixed_precision", "no",
              "--dynamo_backend", "no",
              "--max_restarts",   "0",
              "--main_process_ip", MasterAddr(spec),
              "--main_process_port", MasterPort(spec, master_port),
              "--no_python"};
  cmd.argv.push_back("/bin/sh");
  cmd.argv.push_back("-c");
  cmd.argv.push_back(kAccelerateRedirectScript);
  cmd.argv.insert(cmd.argv.end(), spec.rank_command.begin(), spec.rank_command.end());
  cmd.output = LauncherLogPath(spec.log_dir);
  return cmd;
}

std::optional<std::string> AccelerateRanksUseCpu(const LaunchSpec& spec, const std::string& cuda_driver) {
  if (auto it = spec.env.find("ACCELERATE_USE_CPU"); it != spec.env.end()) return it->second;
  if (const char* own = std::getenv("ACCELERATE_USE_CPU")) return std::string(own);
  if (cuda_driver == "none") return std::string("true");
  return std::nullopt;
}

LaunchCommand LocalRankCommand(const LaunchSpec& spec, int rank, int master_port) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.env["RANK"] = std::to_string(rank);
  cmd.env["WORLD_SIZE"] = std::to_string(spec.ranks);
  cmd.env["LOCAL_RANK"] = std::to_string(rank);
  cmd.env["LOCAL_WORLD_SIZE"] = std::to_string(spec.ranks);
  cmd.env["GROUP_RANK"] = "0";
  if (!spec.env.count("MASTER_ADDR")) cmd.env["MASTER_ADDR"] = "127.0.0.1";
  if (!spec.env.count("MASTER_PORT")) cmd.env["MASTER_PORT"] = std::to_string(master_port);
  if (LocalSetsOmpNumThreads(spec.kind, spec.ranks, spec.env)) cmd.env["OMP_NUM_THREADS"] = "1";
  cmd.argv = spec.rank_command;
  cmd.output = RankLogPath(spec.log_dir, rank);
  return cmd;
}

bool LocalSetsOmpNumThreads(LauncherKind kind, int ranks, const std::map<std::string, std::string>& env) {
  return kind == LauncherKind::kLocal && ranks > 1 && !env.count("OMP_NUM_THREADS") &&
         std::getenv("OMP_NUM_THREADS") == nullptr;
}

LaunchCommand InJobRankCommand(const LaunchSpec& spec, int rank) {
  LaunchCommand cmd;
  cmd.env = CommonRankEnv(spec);
  cmd.argv = spec.rank_command;
  cmd.output = RankLogPath(spec.log_dir, rank);
  return cmd;
}

int RankFromEnvironment() {
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK"}) {
    const std::string v = Getenv(name);
    if (v.empty()) continue;
    char* end = nullptr;
    long r = std::strtol(v.c_str(), &end, 10);
    if (end != v.c_str() && *end == '\0' && r >= 0) return static_cast<int>(r);
  }
  return 0;
}

std::optional<std::filesystem::path> FindExecutable(const std::string& name, const std::string& path_var) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return std::filesystem::absolute(name);
    return std::nullopt;
  }
  std::stringstream dirs(path_var);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    // An empty PATH entry means the current directory (POSIX).
    const std::filesystem::path candidate = (dir.empty() ? std::filesystem::path(".") : std::filesystem::path(dir)) / name;
    if (IsExecutableFile(candidate)) return std::filesystem::absolute(candidate);
  }
  return std::nullopt;
}

Result<std::filesystem::path> FindMpirun() {
  const std::string from_env = Getenv("MPIEXEC");
  if (!from_env.empty()) {
    if (auto p = FindExecutable(from_env, Getenv("PATH"))) return *p;
    return NotFoundError("MPIEXEC is set to '" + from_env + "', which is not an executable program");
  }
  if (auto p = FindExecutable("mpirun", Getenv("PATH"))) return *p;
#ifdef LOCKSTEP_MPIEXEC_DEFAULT
  if (auto p = FindExecutable(LOCKSTEP_MPIEXEC_DEFAULT, "")) return *p;
#endif
  return NotFoundError("mpirun not found on PATH (install openmpi-bin, or set MPIEXEC to its path)");
}

void AddStoreRendezvousEnv(LaunchSpec& spec, const std::string& host, int port) {
  bool other_hosts = spec.kind == LauncherKind::kSrun;
  for (const std::string& a : spec.mpirun_args) {
    other_hosts = other_hosts || a == "-H" || a == "--host" || a.rfind("--host=", 0) == 0 || a == "--hostfile" ||
                  a.rfind("--hostfile=", 0) == 0 || a == "-hostfile" || a == "--machinefile";
  }
  if (!spec.env.count("MASTER_ADDR")) {
    const std::string from_env = Getenv("MASTER_ADDR");
    spec.env["MASTER_ADDR"] = !from_env.empty() ? from_env : other_hosts && !host.empty() ? host : "127.0.0.1";
  }
  if (!spec.env.count("MASTER_PORT")) {
    const std::string from_env = Getenv("MASTER_PORT");
    spec.env["MASTER_PORT"] = !from_env.empty() ? from_env : std::to_string(port);
  }
}

}  // namespace lockstep
