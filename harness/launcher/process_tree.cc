#include "harness/launcher/process_tree.h"

#include <sys/syscall.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
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

// ---- The launch's watcher ----------------------------------------------------------------------
// A process forked from this one before the first rank starts, reading the write end of a pipe
// only this process holds (close-on-exec: no rank inherits it). However this process ends
// (SIGKILL included), the pipe reaches end-of-file and the watcher kills every process of the
// launch: the launch's process group and every process carrying the launch's marker variable
// (mpirun's ranks, which Open MPI moves to groups of their own and which outlive mpirun). It does
// not depend on the ranks running any code of ours (torch imported, init_process_group reached).
// The watcher runs in a group of its own and ignores the terminal's signals, so a signal to this
// process's group (Ctrl-C, a job control kill) does not take it down with us. On a normal end
// this process writes 0 ("done": nothing to kill) and reaps it.
//
// It is forked without exec, so it uses plain system calls and fixed buffers only.

// Reads /proc/<pid>/<file> into buf (at most size-1 bytes); returns the length, -1 on failure.
ssize_t ReadProcFile(long pid, const char* file, char* buf, size_t size) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%ld/%s", pid, file);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < size) {
    const ssize_t n = ::read(fd, buf + got, size - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  buf[got] = '\0';
  return static_cast<ssize_t>(got);
}

// Whether /proc/<pid>/environ holds `marker` ("NAME=value") as one whole entry, read in chunks
// and compared byte by byte.
bool EnvironHas(long pid, const char* marker, size_t marker_len) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t pos = 0;        // bytes of the current entry seen
  bool matching = true;  // the current entry equals the marker so far
  bool found = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n && !found; ++i) {
      if (buf[i] == '\0') {
        found = matching && pos == marker_len;
        pos = 0;
        matching = true;
        continue;
      }
      matching = matching && pos < marker_len && buf[i] == marker[pos];
      ++pos;
    }
    if (found) break;
  }
  ::close(fd);
  return found || (matching && pos == marker_len);
}

// One pass over /proc: SIGKILL to every live process in group `pgid` or carrying `marker`.
// Returns how many it aimed at.
// /proc is listed with getdents64 into a buffer on the stack, not opendir: the watcher is forked
// from a process that may have other threads, and opendir's malloc could wait forever for a lock
// one of them held at the fork.
struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

int KillLaunchPass(pid_t pgid, const char* marker, size_t marker_len) {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return 0;
  const pid_t self = ::getpid();
  int aimed = 0;
  alignas(8) char entries[8192];
  for (;;) {
    const long got = ::syscall(SYS_getdents64, proc, entries, sizeof(entries));
    if (got <= 0) break;
    for (long offset = 0; offset < got;) {
      const auto* e = reinterpret_cast<const LinuxDirent64*>(entries + offset);
      offset += e->d_reclen;
      const char* name = e->d_name;
      if (name[0] < '0' || name[0] > '9') continue;
      const long pid = std::strtol(name, nullptr, 10);
      if (pid <= 0 || pid == self) continue;
      char stat[1024];
      if (ReadProcFile(pid, "stat", stat, sizeof(stat)) <= 0) continue;
      const char* close_paren = std::strrchr(stat, ')');
      if (close_paren == nullptr) continue;
      char state = 0;
      long ppid = 0, pgrp = 0;
      if (std::sscanf(close_paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
      if (state == 'Z' || state == 'X') continue;
      if ((pgid > 0 && pgrp == pgid) || EnvironHas(pid, marker, marker_len)) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        ++aimed;
      }
    }
  }
  ::close(proc);
  return aimed;
}

double MonotonicSeconds() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void RunWatcher(int read_fd, const char* marker) {
  ::setpgid(0, 0);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGALRM}) {
    ::sigaction(sig, &ignore, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_NAME, "lockstep-watch", 0, 0, 0);
  // Hold nothing of ours open (a terminal, a pipe a reader waits on, the run directory's lock).
  int fd = ::fcntl(read_fd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) fd = read_fd;
  const int devnull = ::open("/dev/null", O_RDWR);
  for (int std_fd = 0; std_fd <= 2; ++std_fd) {
    if (devnull >= 0 && devnull != std_fd && std_fd != fd) ::dup2(devnull, std_fd);
  }
  if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0U, 0);

  int32_t pgid = 0;
  for (;;) {
    int32_t value = 0;
    const ssize_t n = ::read(fd, &value, sizeof(value));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(value))) break;  // end of file: the harness is gone
    if (value == 0) ::_exit(0);                            // done: the harness ended the launch itself
    if (pgid == 0) pgid = value;
  }
  // Until nothing of the launch has been seen for a while (a process forked between two passes,
  // or a rank posix_spawn had not yet exec'd, is caught by the next one).
  const size_t marker_len = std::strlen(marker);
  const double deadline = MonotonicSeconds() + 60;
  double quiet_since = MonotonicSeconds();
  while (MonotonicSeconds() < deadline) {
    if (KillLaunchPass(pgid, marker, marker_len) > 0) quiet_since = MonotonicSeconds();
    if (MonotonicSeconds() - quiet_since > 0.5) break;
    struct timespec pause = {0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  ::_exit(0);
}

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
  StopWatcher();
}

Status ProcessTree::StartWatcher() {
  if (watcher_pid_ > 0) return Status::Ok();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return IoError(std::string("cannot make the launch watcher's pipe: ") + std::strerror(errno));
  // Built before the fork: the child only reads it.
  const std::string marker = std::string(kLaunchIdEnv) + "=" + launch_id_;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return IoError(std::string("cannot start the launch watcher: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[1]);
    RunWatcher(fds[0], marker.c_str());
  }
  ::close(fds[0]);
  watcher_pid_ = pid;
  watcher_fd_ = fds[1];
  return Status::Ok();
}

void ProcessTree::TellWatcher(int32_t value) {
  if (watcher_fd_ < 0) return;
  ssize_t n;
  do {
    n = ::write(watcher_fd_, &value, sizeof(value));
  } while (n < 0 && errno == EINTR);
}

void ProcessTree::StopWatcher() {
  if (watcher_pid_ <= 0) return;
  TellWatcher(0);
  ::close(watcher_fd_);
  watcher_fd_ = -1;
  int status = 0;
  while (::waitpid(watcher_pid_, &status, 0) < 0 && errno == EINTR) {
  }
  watcher_pid_ = 0;
}

Result<pid_t> ProcessTree::Spawn(const LaunchCommand& cmd) {
  if (cmd.argv.empty()) return InvalidArgumentError("no program to start");
  // Before anything starts: from its first instruction, no process of the launch outlives us.
  LOCKSTEP_RETURN_IF_ERROR(StartWatcher());

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
  if (pgid_ == 0) {
    pgid_ = pid;
    TellWatcher(static_cast<int32_t>(pgid_));
  }
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
