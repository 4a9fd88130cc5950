// lockstep's agent on one node of a multi-host launch (docs/LAUNCHER.md, "Several hosts"): one
// per node, started by srun beside the ranks, it watches this node's ranks as the launcher watches
// local ones and sends what it sees to the launcher as the run goes: every byte of their traces
// and logs (written to a node-local stage folder), their processes' CPU use, their ends, and a
// heartbeat. So the launcher judges remote ranks as local ones, `--out` needs no file system
// shared with the nodes, and a node that stops answering is a lost node, not a hang.
//
// It ends when the launcher says stop (after sending everything), or when the launcher is gone
// (its connection closed or silent for launcher_timeout_s): then it stops this node's processes
// of the launch first, so that nothing is left behind. Either way it removes the stage folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/agent_link/agent_stage.h"

namespace lockstep {

struct NodeAgentOptions {
  std::vector<std::string> launcher;   // "host:port" endpoints of the launcher, tried in turn
  std::string token;                   // the launch's secret, said in the hello
  std::string launch_id;               // the ranks' LOCKSTEP_LAUNCH_ID marker
  std::filesystem::path stage;         // this node's folder for the launch (made here, removed at the end)
  int ranks = 1;                       // the world size: the files are rank-0 .. rank-(ranks-1)
  double heartbeat_s = 0.5;
  double launcher_timeout_s = 15.0;
  double kill_grace_s = 2.0;
};

// Runs until stopped; the exit status of lockstep-agent: 0 stopped by the launcher, 3 the
// launcher was gone or the agent could not work (said on stderr, and to the launcher if it can).
int RunNodeAgent(const NodeAgentOptions& options);

}  // namespace lockstep
