// lockstep-agent: lockstep's watcher on one node of a multi-host launch (node_agent.h). The
// launcher starts one per node through srun; it is not a program for users to start.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "harness/agent/node_agent.h"
#include "harness/core/exit_code.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep-agent: watches this node's ranks of a lockstep launch for the launcher (started by lockstep)"};
  lockstep::NodeAgentOptions o;
  std::string stage;
  app.add_option("--launcher", o.launcher, "the launcher's host:port endpoints, tried in turn")
      ->required()
      ->delimiter(',');
  app.add_option("--launch-id", o.launch_id, "the ranks' LOCKSTEP_LAUNCH_ID")->required();
  app.add_option("--stage", stage, "this node's folder for the launch (created, removed at the end)")->required();
  app.add_option("--ranks", o.ranks, "the world size")->required()->check(CLI::PositiveNumber);
  app.add_option("--heartbeat", o.heartbeat_s, "seconds between heartbeats")->check(CLI::PositiveNumber);
  app.add_option("--launcher-timeout", o.launcher_timeout_s,
                 "seconds without a word from the launcher after which it is gone")
      ->check(CLI::PositiveNumber);
  app.add_option("--kill-grace", o.kill_grace_s, "SIGTERM, then SIGKILL after this long")->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return lockstep::ToInt(lockstep::ExitCode::kUsageError);
  }
  o.stage = stage;
  // The launch's secret comes in the environment (srun exports the launcher's), never on a
  // command line that every user of the node can read.
  const char* token = std::getenv(lockstep::kAgentTokenEnv);
  if (token == nullptr || *token == '\0') {
    std::fprintf(stderr, "lockstep-agent: %s is not set (lockstep starts this program itself)\n", lockstep::kAgentTokenEnv);
    return lockstep::ToInt(lockstep::ExitCode::kUsageError);
  }
  o.token = token;
  return lockstep::RunNodeAgent(o);
}
