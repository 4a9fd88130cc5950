#include "harness/launcher/process_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "harness/core/lifeline.h"

extern char** environ;

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

bool IsPidName(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsPidName(name)) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// Frees posix_spawn's attribute objects on every path out of Spawn.
struct SpawnAttrs {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnAttrs() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

std::optional<ProcInfo> ReadProcInfo(pid_t pid) { return ReadProcStat(pid); }

std::vector<ProcInfo> ListProcesses() {
  std::vector<ProcInfo> out;
  for (pid_t pid : AllPids()) {
    if (auto info = ReadProcInfo(pid)) out.push_back(*info);
  }
  return out;
}

bool IsAlive(pid_t pid) {
  auto info = ReadProcInfo(pid);
  return info && info->state != 'Z' && info->state != 'X';
}

std::vector<pid_t> FindProcessesWithEnv(const std::string& name, const std::string& value) {
  const std::string wanted = name + "=" + value;
  const pid_t self = ::getpid();
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    if (pid == self) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    if (!in) continue;
    std::string entry;
    while (std::getline(in, entry, '\0')) {
      if (entry == wanted) {
        if (IsAlive(pid)) out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

std::vector<pid_t> FindDescendants(const std::vector<pid_t>& roots) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  std::map<pid_t, char> state;
  for (const ProcInfo& p : ListProcesses()) {
    children.emplace(p.ppid, p.pid);
    state[p.pid] = p.state;
  }
  std::set<pid_t> seen(roots.begin(), roots.end());
  std::vector<pid_t> queue(roots.begin(), roots.end());
  std::vector<pid_t> out;
  while (!queue.empty()) {
    const pid_t parent = queue.back();
    queue.pop_back();
    auto [lo, hi] = children.equal_range(parent);
    for (auto it = lo; it != hi; ++it) {
      if (!seen.insert(it->second).second) continue;
      queue.push_back(it->second);
      if (state[it->second] != 'Z' && state[it->second] != 'X') out.push_back(it->second);
    }
  }
  return out;
}

std::string NewLaunchId() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(gen()));
  return buf;
}

ProcessTree::ProcessTree(std::string launch_id) : launch_id_(std::move(launch_id)) {}

ProcessTree::~ProcessTree() {
  if (!children_.empty()) KillAll(std::chrono::milliseconds(500));
}

Result<pid_t> ProcessTree::Spawn(const LaunchCommand& cmd) {
  if (cmd.argv.empty()) return InvalidArgumentError("no program to start");

  std::map<std::string, std::string> env_map;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env_map[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : cmd.env) env_map[k] = v;
  env_map[kLaunchIdEnv] = launch_id_;
  // The ranks watch this process and end themselves when it is gone, however it died.
  env_map[kLifelineEnv] = LifelineOfThisProcess();
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  SpawnAttrs sa;
  // The child starts with default dispositions and nothing blocked, whatever we (or a test
  // runner) set up: a rank that inherited SIG_IGN for SIGTERM would survive our first round.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
  }
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&sa.attr, &defaults);
  posix_spawnattr_setsigmask(&sa.attr, &empty);
  posix_spawnattr_setpgroup(&sa.attr, pgid_);  // 0: a new group led by the child
  posix_spawnattr_setflags(&sa.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_addopen(&sa.actions, 0, "/dev/null", O_RDONLY, 0);
  if (!cmd.output.empty()) {
    posix_spawn_file_actions_addopen(&sa.actions, 1, cmd.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&sa.actions, 1, 2);
  }

  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &sa.actions, &sa.attr, argv.data(), envp.data());
  if (rc != 0) {
    return IoError("cannot start '" + cmd.argv[0] + "': " + std::strerror(rc) +
                   (cmd.output.empty() ? "" : " (output to " + cmd.output.string() + ")"));
  }
  if (pgid_ == 0) pgid_ = pid;
  children_.push_back(pid);
  return pid;
}

std::optional<int> ProcessTree::Poll(pid_t pid) {
  if (auto it = statuses_.find(pid); it != statuses_.end()) return it->second;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) {
    statuses_[pid] = status;
    return status;
  }
  return std::nullopt;
}

bool ProcessTree::AllEnded() {
  bool all = true;
  for (pid_t c : children_) all = Poll(c).has_value() && all;
  return all;
}

std::vector<pid_t> ProcessTree::Members() {
  std::vector<pid_t> roots;
  for (pid_t c : children_) {
    if (!Poll(c)) roots.push_back(c);
  }
  std::set<pid_t> found(roots.begin(), roots.end());
  for (pid_t p : FindDescendants(roots)) found.insert(p);
  for (pid_t p : FindProcessesWithEnv(kLaunchIdEnv, launch_id_)) found.insert(p);
  std::vector<pid_t> out;
  for (pid_t p : found) {
    if (IsAlive(p)) out.push_back(p);
  }
  return out;
}

int ProcessTree::KillAll(std::chrono::milliseconds grace, std::chrono::milliseconds give_up) {
  // pid -> start time: a pid seen once stays ours only while its start time is unchanged, so a
  // reused pid is never signalled.
  std::map<pid_t, uint64_t> known;
  // Every process a signal was aimed at, once. Not kill()'s successes: the group's SIGTERM may end
  // a process (and its parent's end get it reaped) before kill() reaches it by pid.
  std::set<pid_t> signalled;
  auto refresh = [&]() {
    std::vector<pid_t> roots = Members();
    for (const auto& [pid, start] : known) {
      (void)start;
      roots.push_back(pid);
    }
    std::vector<pid_t> below = FindDescendants(roots);
    roots.insert(roots.end(), below.begin(), below.end());
    std::map<pid_t, uint64_t> next;
    for (pid_t pid : roots) {
      auto info = ReadProcInfo(pid);
      if (!info || info->state == 'Z' || info->state == 'X') continue;
      auto it = known.find(pid);
      if (it != known.end() && it->second != info->start_time) continue;
      next[pid] = info->start_time;
    }
    known = std::move(next);
  };
  auto leader_unreaped = [&]() { return pgid_ > 0 && !statuses_.count(pgid_); };
  auto signal_all = [&](int sig) {
    // While the group leader is unreaped its pid (the group id) cannot have been reused.
    if (leader_unreaped()) ::killpg(pgid_, sig);
    for (const auto& [pid, start] : known) {
      (void)start;
      ::kill(pid, sig);
      signalled.insert(pid);
    }
  };

  refresh();
  signal_all(SIGTERM);
  const auto term_deadline = Clock::now() + grace;
  while (!known.empty() && Clock::now() < term_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto before = known;
    refresh();
    // Newcomers (forked while we were waiting) get their SIGTERM too.
    for (const auto& [pid, start] : known) {
      if (before.count(pid)) continue;
      ::kill(pid, SIGTERM);
      signalled.insert(pid);
    }
  }
  const auto kill_deadline = Clock::now() + give_up;
  while (!known.empty() && Clock::now() < kill_deadline) {
    signal_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    refresh();
  }
  // Reap the direct children (SIGKILLed ones end at once; the loop is bounded all the same).
  while (!AllEnded() && Clock::now() < kill_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return static_cast<int>(signalled.size());
}

}  // namespace lockstep
