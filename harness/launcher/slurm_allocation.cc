#include "harness/launcher/slurm_allocation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

// Splits on commas that are outside brackets.
std::vector<std::string> TopLevelItems(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool AllDigits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return InvalidArgumentError("an empty Slurm node list");
  for (const std::string& item : TopLevelItems(list)) {
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      if (item.empty() || item.find(']') != std::string::npos) {
        return InvalidArgumentError("cannot read the Slurm node list '" + list + "'");
      }
      out.push_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    if (close == std::string::npos || item.find('[', open + 1) != std::string::npos ||
        item.find(']', close + 1) != std::string::npos) {
      return InvalidArgumentError("cannot read the Slurm node list '" + list + "' (at '" + item + "')");
    }
    const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
    std::stringstream ranges(item.substr(open + 1, close - open - 1));
    for (std::string range; std::getline(ranges, range, ',');) {
      const size_t dash = range.find('-');
      const std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      if (!AllDigits(lo) || !AllDigits(hi) || std::stoull(hi) < std::stoull(lo) || std::stoull(hi) - std::stoull(lo) > 100000) {
        return InvalidArgumentError("cannot read the range '" + range + "' of the Slurm node list '" + list + "'");
      }
      const size_t width = lo.size();
      for (unsigned long long i = std::stoull(lo); i <= std::stoull(hi); ++i) {
        std::string n = std::to_string(i);
        if (n.size() < width) n.insert(0, width - n.size(), '0');
        out.push_back(prefix + n + suffix);
      }
    }
  }
  return out;
}

std::optional<SlurmAllocation> AllocationFromEnvironment(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  const std::string job = get("SLURM_JOB_ID");
  std::string nodes = get("SLURM_JOB_NODELIST");
  if (nodes.empty()) nodes = get("SLURM_NODELIST");
  if (job.empty() || nodes.empty()) return std::nullopt;
  Result<std::vector<std::string>> expanded = ExpandHostlist(nodes);
  if (!expanded.ok()) return std::nullopt;
  return SlurmAllocation{job, std::move(expanded).value(), false};
}

std::optional<SlurmAllocation> CurrentAllocation() {
  std::map<std::string, std::string> env;
  for (const char* name : {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return AllocationFromEnvironment(env);
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, double timeout_s) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) return IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(pipefd[1]);
  CommandOutput out;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const double left = std::chrono::duration<double>(until - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000)) <= 0) continue;
    const ssize_t n = ::read(pipefd[0], buf, sizeof(buf));
    if (n > 0) {
      out.output.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(pipefd[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return TimeoutError(argv[0] + " did not end within " + std::to_string(static_cast<int>(timeout_s)) + " s" +
                        (out.output.empty() ? std::string() : ": " + out.output));
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

Result<SlurmAllocation> Allocate(const std::string& name, int ranks, int nodes, int ranks_per_node,
                                 const std::vector<std::string>& extra, double timeout_s) {
  std::vector<std::string> argv = {"salloc", "--no-shell", "--job-name", name, "-n", std::to_string(ranks)};
  if (nodes > 0) argv.insert(argv.end(), {"-N", std::to_string(nodes)});
  if (ranks_per_node > 0) argv.push_back("--ntasks-per-node=" + std::to_string(ranks_per_node));
  argv.insert(argv.end(), extra.begin(), extra.end());
  Result<CommandOutput> run = RunCommand(argv, timeout_s);
  if (!run.ok()) return UnavailableError("salloc: " + run.status().message());
  // salloc: Granted job allocation 42
  std::smatch m;
  const std::regex granted("Granted job allocation ([0-9]+)");
  if (run->exit_code != 0 || !std::regex_search(run->output, m, granted)) {
    return UnavailableError("salloc could not allocate " + std::to_string(ranks) + " tasks" +
                            (nodes > 0 ? " on " + std::to_string(nodes) + " nodes" : std::string()) + " (exit " +
                            std::to_string(run->exit_code) + "): " + run->output);
  }
  SlurmAllocation a;
  a.job_id = m[1];
  a.ours = true;
  Result<CommandOutput> list = RunCommand({"squeue", "-h", "-j", a.job_id, "-o", "%N"}, 30);
  std::string nodelist = list.ok() ? list->output : "";
  while (!nodelist.empty() && (nodelist.back() == '\n' || nodelist.back() == ' ')) nodelist.pop_back();
  Result<std::vector<std::string>> expanded = ExpandHostlist(nodelist);
  if (!list.ok() || list->exit_code != 0 || !expanded.ok()) {
    ReleaseAllocation(a, "");
    return UnavailableError("squeue did not list the nodes of job " + a.job_id + ": " +
                            (list.ok() ? list->output : list.status().message()));
  }
  a.nodes = std::move(expanded).value();
  return a;
}

bool AllocationRunning(const SlurmAllocation& allocation) {
  Result<CommandOutput> state = RunCommand({"squeue", "-h", "-j", allocation.job_id, "-o", "%T"}, 30);
  if (!state.ok() || state->exit_code != 0) return !state.ok() ? true : state->output.find("Invalid job id") == std::string::npos;
  return state->output.find("RUNNING") != std::string::npos;
}

void ReleaseAllocation(const SlurmAllocation& allocation, const std::string& step_prefix) {
  if (allocation.job_id.empty()) return;
  if (allocation.ours) {
    (void)RunCommand({"scancel", allocation.job_id}, 30);
    return;
  }
  if (step_prefix.empty()) return;
  Result<CommandOutput> steps = RunCommand({"squeue", "-h", "-s", "-j", allocation.job_id, "-o", "%i %j"}, 30);
  if (!steps.ok()) return;
  std::istringstream lines(steps->output);
  for (std::string id, name; lines >> id >> name;) {
    if (name.rfind(step_prefix, 0) == 0) (void)RunCommand({"scancel", id}, 30);
  }
}

std::string SrunMpiPlugin(const std::string& srun) {
  if (const char* v = std::getenv("LOCKSTEP_SRUN_MPI"); v && *v) return v;
  Result<CommandOutput> list = RunCommand({srun, "--mpi=list"}, 30);
  if (list.ok() && list->output.find("pmix") != std::string::npos) return "pmix";
  return "none";
}

}  // namespace lockstep
