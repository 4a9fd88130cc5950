#include "harness/launcher/host_group.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/agent_link/agent_stage.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string PathVar(const LaunchSpec& spec) {
  if (auto it = spec.env.find("PATH"); it != spec.env.end()) return it->second;
  const char* path = std::getenv("PATH");
  return path ? path : "";
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string ShortName(const std::string& host) { return host.substr(0, host.find('.')); }

// Every occurrence of `from` in `text` replaced by `to`.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The placement of a launch of `spec`: never more nodes, nor ranks a node, than it has ranks (a
// scenario's 1-rank reference run under --nodes 2 is one rank on one node).
HostPlacement PlacementFor(const LaunchSpec& spec) {
  HostPlacement p = spec.hosts;
  if (p.nodes > spec.ranks) p.nodes = spec.ranks;
  if (p.ranks_per_node > spec.ranks) p.ranks_per_node = spec.ranks;
  return p;
}

// The nodes a launch of `spec` runs on, of `allocated`: --nodes of them, else as many as the ranks
// need at --ntasks-per-node (one rank a node without it), at most all.
Result<std::vector<std::string>> NodesFor(const LaunchSpec& spec, const std::vector<std::string>& allocated) {
  int n = spec.hosts.nodes;
  if (n <= 0) {
    n = spec.hosts.ranks_per_node > 0 ? (spec.ranks + spec.hosts.ranks_per_node - 1) / spec.hosts.ranks_per_node : spec.ranks;
    n = std::min<int>(n, static_cast<int>(allocated.size()));
  }
  if (n > static_cast<int>(allocated.size())) {
    return InvalidArgumentError("--nodes " + std::to_string(n) + ": the allocation has " +
                                std::to_string(allocated.size()) + " node(s) (" + Join(allocated, ",") + ")");
  }
  if (n > spec.ranks) n = spec.ranks;
  return std::vector<std::string>(allocated.begin(), allocated.begin() + n);
}

}  // namespace

Result<std::unique_ptr<HostGroup>> HostGroup::Prepare(const LaunchSpec& in, const std::string& this_host) {
  LaunchSpec spec = in;
  spec.hosts = PlacementFor(in);
  std::unique_ptr<HostGroup> g(new HostGroup(spec, this_host));
  const std::optional<fs::path> srun = FindExecutable("srun", PathVar(spec));
  if (!srun) {
    return NotFoundError("srun not found on PATH (a launch on several hosts needs Slurm: lockstep starts an agent on "
                         "each node with srun)");
  }
  g->srun_ = srun->string();
  if (std::optional<SlurmAllocation> mine = CurrentAllocation()) {
    g->allocation_ = *mine;
  } else {
    if (spec.kind == LauncherKind::kMpirun) {
      return InvalidArgumentError("--launcher mpirun on several nodes runs inside a Slurm allocation (sbatch, salloc), "
                                  "where mpirun starts its daemons through Slurm; from a login node use --launcher srun");
    }
    LOCKSTEP_ASSIGN_OR_RETURN(g->allocation_, Allocate("lockstep-" + spec.launch_id, spec.ranks, spec.hosts.nodes,
                                                       spec.hosts.ranks_per_node, {},
                                                       spec.startup_timeout_s > 0 ? spec.startup_timeout_s : 300));
  }
  Result<std::vector<std::string>> nodes = NodesFor(spec, g->allocation_.nodes);
  if (!nodes.ok()) {
    ReleaseAllocation(g->allocation_, "");
    g->finished_ = true;
    return nodes.status();
  }
  g->nodes_ = std::move(nodes).value();
  Result<std::unique_ptr<AgentHub>> hub = AgentHub::Open(NewLaunchId(), spec.trace_dir, spec.log_dir);
  if (!hub.ok()) {
    ReleaseAllocation(g->allocation_, "");
    g->finished_ = true;
    return hub.status();
  }
  g->hub_ = std::move(hub).value();
  return g;
}

HostGroup::~HostGroup() {
  if (!finished_) Finish(2.0);
}

fs::path HostGroup::Stage() const { return spec_.hosts.node_dir / ("lockstep-" + spec_.launch_id); }

Status HostGroup::StartAgents() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path agent = self.parent_path() / "lockstep-agent";
  if (ec || ::access(agent.c_str(), X_OK) != 0) {
    return NotFoundError("no lockstep-agent next to " + self.string() + " (it is built with lockstep)");
  }
  LaunchCommand cmd;
  // srun exports this environment to the agents: the token travels there, not on a command line.
  cmd.env[kAgentTokenEnv] = hub_->token();
  cmd.argv = {srun_,
              "--jobid=" + allocation_.job_id,
              "--overlap",
              "--nodelist=" + Join(nodes_, ","),
              "--nodes=" + std::to_string(nodes_.size()),
              "--ntasks-per-node=1",
              "--kill-on-bad-exit=0",
              "--job-name=" + StepName("agents"),
              agent.string(),
              "--launcher",
              Join(hub_->Endpoints(), ","),
              "--launch-id",
              spec_.launch_id,
              "--stage",
              Stage().string(),
              "--ranks",
              std::to_string(spec_.ranks),
              "--launcher-timeout",
              std::to_string(spec_.hosts.node_timeout_s),
              "--kill-grace",
              std::to_string(spec_.kill_grace_s)};
  agents_log_ = spec_.log_dir / "agents.log";
  cmd.output = agents_log_;
  LOCKSTEP_ASSIGN_OR_RETURN(agents_pid_, agents_.Spawn(cmd));
  return Status::Ok();
}

Status HostGroup::Poll() {
  LOCKSTEP_RETURN_IF_ERROR(hub_->Poll());
  if (!hub_->error_text().empty()) return UnavailableError("the agent on " + hub_->error_text());
  if (!Ready() && agents_pid_ > 0 && agents_.Poll(agents_pid_)) {
    std::string tail = ReadFileTail(agents_log_, 2000);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    return UnavailableError("the agents' job step (srun) ended before every node's agent reached lockstep on " +
                            this_host_ + " (unheard: " + Join(Unheard(), ",") + ")" +
                            (tail.empty() ? std::string() : ": " + tail));
  }
  return Status::Ok();
}

bool HostGroup::Ready() const { return Unheard().empty(); }

std::vector<std::string> HostGroup::Unheard() const {
  std::vector<std::string> out;
  for (const std::string& n : nodes_) {
    bool heard = false;
    for (const AgentHub::Host& h : hub_->hosts()) heard = heard || ShortName(h.name) == ShortName(n);
    if (!heard) out.push_back(n);
  }
  return out;
}

Result<LaunchCommand> HostGroup::RanksCommand() {
  const AgentHub::Host* first = nullptr;
  for (const AgentHub::Host& h : hub_->hosts()) {
    if (ShortName(h.name) == ShortName(nodes_.front())) first = &h;
  }
  if (!first) return InternalError("no agent of the first node " + nodes_.front());
  LaunchSpec s = spec_;
  // The run folder exists only here: the ranks write and read each node's stage instead.
  const std::string run_dir = spec_.trace_dir.parent_path().string();
  const std::string stage = Stage().string();
  for (std::string& arg : s.rank_command) arg = ReplaceAll(arg, run_dir, stage);
  for (auto& [name, value] : s.env) value = ReplaceAll(value, run_dir, stage);
  s.trace_dir = StageTraceDir(Stage());
  s.log_dir = StageLogDir(Stage());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    hub_->PutFile(entry.path().filename().string(), bytes.str());
  }
  // The rendezvous: the first node, as its agent's connection showed it (routable from here, so
  // from the other nodes too), on a port that was free there.
  if (!s.env.count("MASTER_ADDR")) s.env["MASTER_ADDR"] = first->address;
  if (!s.env.count("MASTER_PORT") && first->free_port > 0) s.env["MASTER_PORT"] = std::to_string(first->free_port);
  s.env["LOCKSTEP_NODES"] = std::to_string(nodes_.size());
  SrunStep step;
  step.job_id = allocation_.job_id;
  step.nodelist = Join(nodes_, ",");
  step.nodes = static_cast<int>(nodes_.size());
  step.ranks_per_node = spec_.hosts.ranks_per_node;
  step.name = StepName("ranks");
  LaunchCommand cmd;
  switch (spec_.kind) {
    case LauncherKind::kSrun:
      step.mpi = SrunMpiPlugin(srun_);
      cmd = SrunStepCommand(s, srun_, step);
      break;
    case LauncherKind::kTorchrun: {
      const std::optional<fs::path> torchrun = FindExecutable("torchrun", PathVar(spec_));
      if (!torchrun) return NotFoundError("torchrun not found on PATH (--launcher torchrun needs PyTorch's torchrun)");
      cmd = TorchrunPerNodeCommand(s, srun_, step, torchrun->string(),
                                   s.env.at("MASTER_ADDR") + ":" + s.env.at("MASTER_PORT"));
      break;
    }
    case LauncherKind::kMpirun: {
      LOCKSTEP_ASSIGN_OR_RETURN(const fs::path mpirun, FindMpirun());
      cmd = MpirunCommand(s, mpirun.string());
      break;
    }
    default:
      return InternalError(std::string("no multi-host launch under ") + ToString(spec_.kind));
  }
  // Its own output stays here, where the launcher reads it.
  cmd.output = LauncherLogPath(spec_.log_dir);
  return cmd;
}

std::vector<LostHost> HostGroup::Lost(const TraceWatcher& watcher) const {
  std::vector<LostHost> out;
  const Clock::time_point now = Clock::now();
  for (const std::string& name : hub_->LostHosts(spec_.hosts.node_timeout_s)) {
    LostHost h;
    h.host = name;
    if (const AgentHub::Host* host = hub_->host(name)) {
      h.silent_s = std::chrono::duration<double>(now - host->last_heard).count();
    }
    for (int r = 0; r < watcher.size(); ++r) {
      const RankProgress& p = watcher.rank(r);
      const AgentHub::RemoteRank* rr = hub_->rank(r);
      const bool there = ShortName(p.host) == ShortName(name) || (rr && ShortName(rr->host) == ShortName(name));
      if (!there) continue;
      h.ranks.push_back(r);
      if (p.last_step && (!h.last_step || *p.last_step < *h.last_step)) h.last_step = p.last_step;
    }
    out.push_back(h);
  }
  return out;
}

std::string HostGroup::AllocationEnded() const {
  if (AllocationRunning(allocation_)) return "";
  return "the Slurm job " + allocation_.job_id + " of this launch was cancelled or ended (scancel, or its time limit) " +
         "while its ranks ran; they were stopped with it";
}

void HostGroup::Finish(double wait_s) {
  if (finished_) return;
  finished_ = true;
  hub_->Stop();
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  while (Clock::now() < until) {
    (void)hub_->Poll();
    if (hub_->AllDone(spec_.hosts.node_timeout_s)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  agents_.KillAll(std::chrono::milliseconds(static_cast<int64_t>(spec_.kill_grace_s * 1000)));
  ReleaseAllocation(allocation_, StepName(""));
}

}  // namespace lockstep
