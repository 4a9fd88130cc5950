// The processes of one launch: started in one new process group, each carrying a marker variable
// in its environment, and ended together, also when this process dies without a word (SIGKILL):
// a watcher process, forked before the first start, kills the group and every marked process
// once this process is gone (process_tree.cc). Ending walks /proc as well as signalling the group,
// because launchers move their children elsewhere (Open MPI puts every rank in a process group of
// its own; a daemon may call setsid) and orphans are reparented away from us.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/proc_stat.h"
#include "harness/core/status.h"
#include "harness/launcher/launch_command.h"

namespace lockstep {

class ProcessTree {
 public:
  // Every process this tree starts gets kLaunchIdEnv=launch_id in its environment, and
  // kLifelineEnv naming this process (harness/core/lifeline.h: the ranks die with it).
  explicit ProcessTree(std::string launch_id);
  ~ProcessTree();  // ends whatever is still running (KillAll with a short grace)
  ProcessTree(const ProcessTree&) = delete;
  ProcessTree& operator=(const ProcessTree&) = delete;

  // Starts cmd.argv[0] (a path; no PATH search) with stdin from /dev/null and stdout and stderr
  // appended to a truncated cmd.output. The first process leads a new process group; later ones
  // join it. Fails when the program cannot be executed.
  Result<pid_t> Spawn(const LaunchCommand& cmd);

  // The wait status of a direct child once it has ended (reaped here, remembered after).
  std::optional<int> Poll(pid_t pid);
  bool AllEnded();

  // SIGTERM to the group and to every process of the launch, SIGKILL to what is left after
  // `grace`, until no process of the launch remains (or `give_up` has passed). Reaps the direct
  // children, whose statuses Poll then returns. Returns how many processes it found and signalled.
  int KillAll(std::chrono::milliseconds grace, std::chrono::milliseconds give_up = std::chrono::seconds(10));

  // Live (not zombie) processes of this launch: descendants of our children and marked ones.
  std::vector<pid_t> Members();

  const std::vector<pid_t>& children() const { return children_; }
  pid_t process_group() const { return pgid_; }
  const std::string& launch_id() const { return launch_id_; }
  // The watcher's pid (0 before the first Spawn and after the tree ended).
  pid_t watcher() const { return watcher_pid_; }

 private:
  Status StartWatcher();
  void TellWatcher(int32_t value);
  void StopWatcher();

  std::string launch_id_;
  pid_t pgid_ = 0;
  std::vector<pid_t> children_;
  std::map<pid_t, int> statuses_;
  pid_t watcher_pid_ = 0;
  int watcher_fd_ = -1;  // the pipe's write end; end-of-file tells the watcher we are gone
};

// /proc helpers, public for tests and diagnostics.
using ProcInfo = ProcStat;
std::optional<ProcInfo> ReadProcInfo(pid_t pid);
std::vector<ProcInfo> ListProcesses();
bool IsAlive(pid_t pid);  // exists and is not a zombie
// Processes whose environment holds name=value exactly (only ours are readable without root).
std::vector<pid_t> FindProcessesWithEnv(const std::string& name, const std::string& value);
// Every live process below `roots` in the parent tree (the roots excluded).
std::vector<pid_t> FindDescendants(const std::vector<pid_t>& roots);

// A random hex id for LOCKSTEP_LAUNCH_ID.
std::string NewLaunchId();

}  // namespace lockstep
