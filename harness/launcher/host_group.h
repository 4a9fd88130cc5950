// The hosts of a multi-host launch (docs/LAUNCHER.md, "Several hosts"): the Slurm allocation it
// runs in (this process's, or one asked for from a login node and given back), one agent per node
// started as a job step of its own (harness/agent/node_agent.h), and the hub they stream to
// (agent_hub.h). The ranks start once every node's agent has said hello: then the rendezvous is
// the first node's routable address as its agent's connection showed it (never loopback, never
// this host), the run folder is mapped to each node's stage folder (only this host has --out),
// and the run folder's files (the scenario the ranks read) are put on every node first.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/launcher/agent_hub.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/launch_spec.h"
#include "harness/launcher/process_tree.h"
#include "harness/launcher/slurm_allocation.h"
#include "harness/launcher/trace_watcher.h"
#include "harness/result/launch_report.h"

namespace lockstep {

class HostGroup {
 public:
  // Finds or asks for the allocation and opens the hub. `this_host`: where lockstep runs.
  static Result<std::unique_ptr<HostGroup>> Prepare(const LaunchSpec& spec, const std::string& this_host);
  ~HostGroup();

  // Starts the agents' job step (one task per node).
  Status StartAgents();
  // Reads what the agents sent. An error when the launch cannot go on: an agent's own error, a
  // file that cannot be written, the agents' step ended before every agent said hello.
  Status Poll();
  // Every node's agent has said hello.
  bool Ready() const;
  // The nodes whose agent has not said hello yet, for a start-up timeout's message.
  std::vector<std::string> Unheard() const;

  // The ranks' job step, to start once Ready(): its command, with the run folder mapped to the
  // stage and the rendezvous at the first node; the run folder's files are put on every node.
  Result<LaunchCommand> RanksCommand();

  AgentHub& hub() { return *hub_; }
  const AgentHub& hub() const { return *hub_; }
  const std::vector<std::string>& nodes() const { return nodes_; }

  // The hosts that stopped answering for node_timeout_s (or whose agent's connection closed
  // without a bye), each with its ranks (by their traces) and the last step they all recorded.
  std::vector<LostHost> Lost(const TraceWatcher& watcher) const;

  // Why the hosts fell silent all together, when it was the allocation that ended (scancel, its
  // time limit), not the nodes: "the Slurm job J was cancelled or ended (...)"; "" while it runs.
  std::string AllocationEnded() const;

  // The end of the launch, after the ranks' step was stopped: tells the agents to stop, waits
  // (at most `wait_s`) for their last bytes and byes, ends their step and gives the allocation
  // back (or cancels this launch's steps in one that is not ours).
  void Finish(double wait_s);

 private:
  HostGroup(const LaunchSpec& spec, std::string this_host) : spec_(spec), this_host_(std::move(this_host)),
        agents_(spec.launch_id + "-agents") {}
  // The folder of this launch on each node.
  std::filesystem::path Stage() const;
  std::string StepName(const std::string& what) const { return "lockstep-" + spec_.launch_id + "-" + what; }

  LaunchSpec spec_;
  std::string this_host_;
  std::string srun_;
  SlurmAllocation allocation_;
  std::vector<std::string> nodes_;   // the nodes the ranks run on, in order
  std::unique_ptr<AgentHub> hub_;
  ProcessTree agents_;
  pid_t agents_pid_ = 0;
  std::filesystem::path agents_log_;
  bool finished_ = false;
};

}  // namespace lockstep
