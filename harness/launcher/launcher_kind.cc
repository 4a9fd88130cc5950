#include "harness/launcher/launcher_kind.h"

#include <cstdlib>

#include "harness/launcher/rendezvous_port.h"

namespace lockstep {
namespace {

std::string PathVar(const LaunchSpec& spec) {
  if (auto it = spec.env.find("PATH"); it != spec.env.end()) return it->second;
  const char* path = std::getenv("PATH");
  return path ? path : "";
}

Result<LaunchPlan> OneJobLauncher(LaunchCommand cmd) {
  LaunchPlan plan;
  plan.summary = cmd.ToString();
  plan.commands.push_back(std::move(cmd));
  plan.command_rank.push_back(-1);
  return plan;
}

Result<LaunchPlan> PlanMpirun(LaunchSpec& spec, const std::string&, const std::string& host) {
  LOCKSTEP_ASSIGN_OR_RETURN(int port, PickFreePort());
  AddStoreRendezvousEnv(spec, host, port);
  LOCKSTEP_ASSIGN_OR_RETURN(auto mpirun, FindMpirun());
  return OneJobLauncher(MpirunCommand(spec, mpirun.string()));
}

Result<LaunchPlan> PlanLocal(LaunchSpec& spec, const std::string&, const std::string&) {
  LOCKSTEP_ASSIGN_OR_RETURN(int port, PickFreePort());
  LaunchPlan plan;
  for (int r = 0; r < spec.ranks; ++r) {
    plan.commands.push_back(LocalRankCommand(spec, r, port));
    plan.command_rank.push_back(r);
  }
  plan.summary = "local x" + std::to_string(spec.ranks) + ": " + plan.commands[0].ToString();
  return plan;
}

Result<LaunchPlan> PlanInJob(LaunchSpec& spec, const std::string&, const std::string&) {
  const int rank = RankFromEnvironment();
  if (rank >= spec.ranks) {
    return InvalidArgumentError("this process is rank " + std::to_string(rank) + " of its job, but the launch asks for " +
                                std::to_string(spec.ranks) + " ranks");
  }
  LaunchPlan plan;
  plan.commands.push_back(InJobRankCommand(spec, rank));
  plan.command_rank.push_back(rank);
  plan.summary = plan.commands[0].ToString();
  return plan;
}

// torchrun and accelerate: PyTorch's launchers, found on PATH, each starting the N local ranks.
Result<LaunchPlan> PlanPythonLauncher(LaunchSpec& spec, const std::string& path_var, bool torchrun) {
  const char* name = torchrun ? "torchrun" : "accelerate";
  auto program = FindExecutable(name, path_var);
  if (!program) {
    return NotFoundError(std::string(name) + " not found on PATH (--launcher " + name + " needs " +
                         (torchrun ? "PyTorch's torchrun: pip install torch" : "Hugging Face Accelerate: pip install accelerate") +
                         " into the environment on PATH)");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(int port, PickFreePort());
  return OneJobLauncher(torchrun ? TorchrunCommand(spec, program->string(), port)
                                 : AccelerateCommand(spec, program->string(), port));
}
Result<LaunchPlan> PlanTorchrun(LaunchSpec& spec, const std::string& path_var, const std::string&) {
  return PlanPythonLauncher(spec, path_var, true);
}
Result<LaunchPlan> PlanAccelerate(LaunchSpec& spec, const std::string& path_var, const std::string&) {
  return PlanPythonLauncher(spec, path_var, false);
}

// One row per kind; the order is the enum's.
using OnNodes = LauncherKindInfo::OnNodes;
const LauncherKindInfo kKinds[] = {
    {LauncherKind::kMpirun, "mpirun", false, true, OnNodes::kWhenGivenNodes, &PlanMpirun},
    {LauncherKind::kSrun, "srun", false, false, OnNodes::kAlways, nullptr},
    {LauncherKind::kLocal, "local", true, true, OnNodes::kNever, &PlanLocal},
    {LauncherKind::kNone, "none", true, true, OnNodes::kNever, &PlanInJob},
    {LauncherKind::kTorchrun, "torchrun", false, true, OnNodes::kWhenGivenNodes, &PlanTorchrun},
    {LauncherKind::kAccelerate, "accelerate", false, true, OnNodes::kNever, &PlanAccelerate},
};

}  // namespace

const LauncherKindInfo& KindInfo(LauncherKind kind) {
  for (const LauncherKindInfo& k : kKinds) {
    if (k.kind == kind) return k;
  }
  return kKinds[0];  // unreachable: every enumerator has its row (launcher_kind_test)
}

template <>
const NameTable<LauncherKind>& NamesOf<LauncherKind>() {
  static const NameTable<LauncherKind> kTable = [] {
    NameTable<LauncherKind> t;
    for (const LauncherKindInfo& k : kKinds) t.push_back({k.name, k.kind});
    return t;
  }();
  return kTable;
}

const char* ToString(LauncherKind kind) { return KindInfo(kind).name; }

bool RunsOnNodes(const LaunchSpec& spec) {
  const LauncherKindInfo::OnNodes on = KindInfo(spec.kind).on_nodes;
  return on == LauncherKindInfo::OnNodes::kAlways || (on == LauncherKindInfo::OnNodes::kWhenGivenNodes && spec.hosts.nodes > 0);
}

Result<LaunchPlan> PlanLaunch(LaunchSpec& spec, const std::string& host) {
  const LauncherKindInfo& info = KindInfo(spec.kind);
  const std::string path_var = PathVar(spec);
  if (info.resolves_program_here) {
    const std::string& program = spec.rank_command[0];
    auto resolved = FindExecutable(program, path_var);
    if (!resolved) {
      return NotFoundError("cannot start the rank program '" + program + "': " +
                           (program.find('/') != std::string::npos ? "no such executable file" : "not found on PATH"));
    }
    spec.rank_command[0] = resolved->string();
  }
  if (info.plan == nullptr) return InternalError(std::string(info.name) + "'s ranks run on nodes (host_group.h)");
  return info.plan(spec, path_var, host);
}

}  // namespace lockstep
