#include "harness/launcher/launcher.h"

#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/core/proc_stat.h"
#include "harness/core/untrusted_input.h"
#include "harness/launcher/host_group.h"
#include "harness/launcher/interrupt_guard.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/launch_judgement.h"
#include "harness/launcher/launcher_kind.h"
#include "harness/launcher/rendezvous_port.h"
#include "harness/launcher/launcher_output_parser.h"
#include "harness/launcher/process_tree.h"
#include "harness/launcher/rank_cpu.h"
#include "harness/launcher/spawn_watch.h"
#include "harness/launcher/stall_judgement.h"
#include "harness/launcher/trace_watcher.h"
#include "harness/trace/mapped_append_file.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

// Often enough that a crash or a signal is seen well within a second, rarely enough that the
// stat calls cost nothing next to the ranks.
constexpr int kPollMs = 100;
// mpirun (Open MPI 4.1) takes 1-2 s after a rank's death to end the job and say how the rank
// died; a rank whose process vanished is reported without those details after this long.
constexpr double kLauncherReportWindowS = 3.0;
// Once every rank's process has ended, the job launcher only has its report left to print: it
// is waited for longer. accelerate's Python agent stopped the ranks at once after a death but
// printed its summary more than 3 s later on a loaded machine (the Debian 13 root, 2 cores at
// load 8); the report names the signal.
constexpr double kLauncherExitWindowS = 30.0;
// A rank whose process is ending (proc_stat.h IsEnding) may take seconds more to be reapable: a
// core dump, or a GPU driver tearing down its context (the 2026-11-27 H200 run: 16 ranks sharing
// one GPU, a SIGSEGV'd rank's peers saw its sockets close over 3 s before it could be reaped).
// Its peers' communication errors wait this long for its death.
constexpr double kEndingRankWindowS = 30.0;
// How often the ranks' CPU use is sampled (each sample walks /proc for their descendants).
constexpr double kCpuSampleS = 1.0;
// A pass of the launcher's loop that began this long after the one before found the launcher
// itself starved (a machine overloaded, its process stopped): what it could not watch, beyond
// this, is not counted as the ranks' quiet time (a CI run at load 8 once judged ranks starved
// as long as the launcher "hung" after 7 s under a 2 s hang timeout).
constexpr double kStarvedAfterS = 1.0;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The last few non-empty lines of a launcher's output, for a message.
std::string LastLines(const std::string& text, int n) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t-") != std::string::npos) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - static_cast<size_t>(n) : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : " | ") + CutLongText(lines[i]);
  }
  return out;
}

// What a rank that stopped on a harness error said: "lockstep-rank R: <message>" is the last
// thing it prints (harness/rank/run_rank.cc); empty when its log has no such line.
std::string RankErrorFromLog(const std::filesystem::path& log) {
  const std::string text = ReadFileTail(log, 16 * 1024);
  std::istringstream in(text);
  std::string found;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("lockstep-rank ", 0) == 0) {
      const size_t colon = line.find(": ");
      found = CutLongText(colon == std::string::npos ? line : line.substr(colon + 2));
    }
  }
  return found;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + SignalDescription(WTERMSIG(status)) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

// Less room than this on a trace's file system counts as full (a record is one write of up to a
// few megabytes; a full disk keeps a few blocks back for root).
constexpr unsigned long long kFullDiskBytes = 1 << 20;

class LaunchRun {
 public:
  LaunchRun(LaunchSpec spec, const ProgressCallback& on_progress)
      : spec_(std::move(spec)),
        t0_(Clock::now()),
        tree_(spec_.launch_id),
        watcher_(spec_.trace_dir, spec_.ranks, on_progress),
        cpu_(spec_.ranks),
        spawns_(spec_.trace_dir, on_progress) {
    for (int r = 0; r < spec_.ranks; ++r) {
      RankExit e;
      e.rank = r;
      report_.ranks.push_back(e);
    }
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) hostname_ = host;
  }

  LaunchReport Run();

 private:
  LaunchReport Fail(const std::string& message);
  Status Prepare();
  Status Start();
  // One round of the watch loop; sets ending_ when the launch is over.
  void Watch();
  // Several hosts: reads the agents; starts the ranks once every node's agent is there. False
  // when this pass is over (the ranks not started yet, or the launch ending).
  bool WatchHosts();
  // The agents' news of rank r's process (nullptr without agents or without news).
  const AgentHub::RemoteRank* Remote(int r) const { return hosts_ ? hosts_->hub().rank(r) : nullptr; }
  void CheckDirectRanks();
  // Records how direct rank i ended (its wait status); a rank that did not exit cleanly, or
  // exited 0 without its footer, joins failed_ranks_.
  void RecordDirectExit(size_t i, int status);
  void CheckLauncherProcess();
  void CheckVanishedRanks();
  // Start-up: true once every rank's trace shows its step-0 record, a footer, or a collective
  // begun in its first step; sets ending_ when startup_timeout_s passes before that.
  bool CheckStartup();
  // The launched process has not started training itself and has spawned ranks of its own
  // (spawn_watch.h): the newest spawning's world is watched as launched ranks are.
  void CheckSpawned();
  // " (N bytes free): its trace could not be written" when the traces' file system has no room
  // left (a rank that failed there without a footer could not write it); empty when there is room.
  std::string FullDiskError() const;
  // What the launch looked like at its end, for JudgeLaunch.
  LaunchObservation Observation() const;
  // A hang of the ranks `watcher` follows (the launched ones, or a spawned world), quiet since
  // `since`, whose activities are `activities`.
  void CheckHang(const TraceWatcher& watcher, Clock::time_point since, const std::vector<RankActivity>& activities);
  // Samples the CPU use of every rank whose processes this host can see.
  void SampleCpu();
  // What each rank is doing now, for JudgeStall.
  std::vector<RankActivity> Activities() const;
  std::vector<RankActivity> Activities(const SpawnWatch::World& world) const;
  // The process of rank r on this host: its trace header's pid, or the process started for it.
  std::optional<pid_t> LocalPid(int r) const;
  // The process a trace says is its rank's, when it runs on this host.
  std::optional<pid_t> TracePid(const RankProgress& p) const;
  // Whether a rank without a footer has a process on this host that is ending (IsEnding); each
  // such rank is remembered in ending_ranks_, with its signal.
  bool SomeRankIsEnding();
  // The launcher did not run for `unobserved_s` (kStarvedAfterS): the windows that wait for
  // something to show (progress, a peer's death, a launcher's report) are moved by as much.
  void DiscountUnobserved(double unobserved_s);
  // Whether every failed rank stopped on a communication error (its footer says so): each may
  // echo a peer that is still dying, whose own end decides the verdict.
  bool OnlyCommunicationEchoesFailed() const;
  void Finish();
  bool IsDirect() const { return KindInfo(spec_.kind).direct; }
  // How long a job launcher may take to say how a vanished rank died: kLauncherReportWindowS
  // while some rank still runs (a launcher that does not count the rank's end as a failure, such
  // as an exit 0 mid-run, never will), kLauncherExitWindowS once every rank has ended.
  double ReportWindowS() const;
  bool EveryRankEnded() const;

  LaunchSpec spec_;
  Clock::time_point t0_;
  ProcessTree tree_;
  TraceWatcher watcher_;
  RankCpu cpu_;
  SpawnWatch spawns_;
  // The spawning whose world the ending is of (LaunchReport::spawning); 0: the launched ranks'.
  int spawn_ending_ = 0;
  std::optional<Clock::time_point> cpu_sampled_at_;
  StallVerdict stall_;  // the judgement that ended the launch as a hang
  double quiet_for_s_ = 0;
  LaunchReport report_;
  std::vector<LaunchCommand> commands_;
  std::vector<int> command_rank_;  // the rank each command runs; -1 for a job launcher (mpirun, srun, torchrun, accelerate)
  std::vector<pid_t> pids_;
  std::vector<bool> ended_;
  std::optional<LaunchEnding> ending_;
  std::vector<int> failed_ranks_;     // ranks that died on their own
  // Ranks whose process was seen ending without a footer, and the signal it ended by where seen.
  std::map<int, std::optional<int>> ending_ranks_;
  std::vector<bool> still_running_;   // per rank, when the launcher ended the job
  Clock::time_point last_progress_;
  std::optional<Clock::time_point> started_at_;  // when the last rank finished start-up
  int interrupt_signal_ = 0;
  // A job launcher: ranks on this host whose process is gone without a trace footer, and when
  // that was first seen. The launcher gets a while to exit and say how they died.
  std::vector<int> vanished_ranks_;
  std::optional<Clock::time_point> vanished_at_;
  // When a rank first wrote a communication-error footer: a peer's death, if that was the cause,
  // gets a while to show before the launch ends as that rank's error.
  std::optional<Clock::time_point> communication_error_at_;
  std::string hostname_;
  // Several hosts (host_group.h): the ranks start once every node's agent is there; their
  // processes are seen through the agents; a host that stops answering is lost.
  std::unique_ptr<HostGroup> hosts_;
  bool ranks_started_ = true;
  std::vector<LostHost> lost_hosts_;
};

LaunchReport LaunchRun::Fail(const std::string& message) {
  report_.ending = LaunchEnding::kLaunchFailed;
  report_.message = message;
  report_.duration_s = SecondsSince(t0_);
  return report_;
}

Status LaunchRun::Prepare() {
  std::error_code ec;
  for (const auto& dir : {spec_.trace_dir, spec_.log_dir}) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return IoError("cannot create " + dir.string() + ": " + ec.message());
  }
  if (RunsOnNodes(spec_)) {
    // The ranks' command is known once the agents are there (WatchHosts).
    LOCKSTEP_ASSIGN_OR_RETURN(hosts_, HostGroup::Prepare(spec_, hostname_));
    for (int r = 0; r < spec_.ranks; ++r) std::filesystem::remove(RankTracePath(spec_.trace_dir, r), ec);
    return Status::Ok();
  }
  LOCKSTEP_ASSIGN_OR_RETURN(LaunchPlan plan, PlanLaunch(spec_, hostname_));
  commands_ = std::move(plan.commands);
  command_rank_ = std::move(plan.command_rank);
  report_.command = std::move(plan.summary);

  // Traces from an earlier run in the same directory would read as this run's progress. Only
  // the ranks this process starts are ours to clear (under --launcher none, the others belong
  // to the sibling processes of the job).
  for (size_t i = 0; i < commands_.size(); ++i) {
    if (command_rank_[i] >= 0) {
      std::filesystem::remove(RankTracePath(spec_.trace_dir, command_rank_[i]), ec);
    } else {
      for (int r = 0; r < spec_.ranks; ++r) std::filesystem::remove(RankTracePath(spec_.trace_dir, r), ec);
    }
  }

  return Status::Ok();
}

Status LaunchRun::Start() {
  if (hosts_) {
    ranks_started_ = false;
    return hosts_->StartAgents();
  }
  for (const LaunchCommand& cmd : commands_) {
    auto pid = tree_.Spawn(cmd);
    if (!pid.ok()) return pid.status();
    pids_.push_back(*pid);
    ended_.push_back(false);
  }
  return Status::Ok();
}

void LaunchRun::RecordDirectExit(size_t i, int status) {
  ended_[i] = true;
  RankExit& e = report_.ranks[static_cast<size_t>(command_rank_[i])];
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.note = DescribeWaitStatus(status);
  const bool clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean_exit) {
    failed_ranks_.push_back(e.rank);
    return;
  }
  // The footer is written before exit, so it is in the file by now.
  watcher_.Poll();
  const RankProgress& p = watcher_.rank(e.rank);
  if (p.file_seen && !p.footer) {
    e.note = "exited with code 0 before writing its trace footer";
    failed_ranks_.push_back(e.rank);
  }
}

void LaunchRun::CheckDirectRanks() {
  bool all_ended = true;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (ended_[i]) continue;
    const auto status = tree_.Poll(pids_[i]);
    if (!status) {
      all_ended = false;
      continue;
    }
    RecordDirectExit(i, *status);
  }
  if (!failed_ranks_.empty()) {
    // Survivors that exited on a communication error while a peer still runs wait for Watch's
    // window: the peer may be dying (its sockets close before its process can be reaped).
    if (watcher_.Poll()) last_progress_ = Clock::now();
    if (all_ended || !OnlyCommunicationEchoesFailed()) ending_ = LaunchEnding::kCrash;
  } else if (all_ended) {
    ending_ = LaunchEnding::kClean;
  }
}

bool LaunchRun::OnlyCommunicationEchoesFailed() const {
  for (int r : failed_ranks_) {
    const RankProgress& p = watcher_.rank(r);
    if (!p.footer || !IsCommunicationFailure(p.footer_status)) return false;
  }
  return true;
}

bool LaunchRun::EveryRankEnded() const {
  for (int r = 0; r < spec_.ranks; ++r) {
    const RankProgress& p = watcher_.rank(r);
    if (const AgentHub::RemoteRank* remote = Remote(r)) {
      if (!remote->gone) return false;
      continue;
    }
    // A rank on another host without an agent, or not started, cannot be seen to have ended.
    if (!p.pid || p.host.empty() || p.host != hostname_) return false;
    if (IsAlive(static_cast<pid_t>(*p.pid))) return false;
  }
  return true;
}

double LaunchRun::ReportWindowS() const {
  return EveryRankEnded() ? kLauncherExitWindowS : kLauncherReportWindowS;
}

void LaunchRun::CheckVanishedRanks() {
  if (vanished_at_) {
    const double window_s = ReportWindowS();
    if (SecondsSince(*vanished_at_) < window_s) return;
    // A footer read since (see below) means the rank finished: it did not vanish.
    vanished_ranks_.erase(std::remove_if(vanished_ranks_.begin(), vanished_ranks_.end(),
                                         [&](int r) { return watcher_.rank(r).footer; }),
                          vanished_ranks_.end());
    if (vanished_ranks_.empty()) {
      vanished_at_.reset();
      return;
    }
    const char* launcher = ToString(spec_.kind);
    for (int r : vanished_ranks_) {
      RankExit& e = report_.ranks[static_cast<size_t>(r)];
      e.note = "process " + std::to_string(*watcher_.rank(r).pid) + " ended without writing its trace footer (" +
               launcher + " did not report how within " + std::to_string(static_cast<int>(window_s)) + " s)";
      failed_ranks_.push_back(r);
    }
    ending_ = LaunchEnding::kCrash;
    return;
  }
  bool read_again = false;
  for (int r = 0; r < spec_.ranks; ++r) {
    const RankProgress& p = watcher_.rank(r);
    if (!p.pid || p.footer) continue;
    // A process on this host is looked up in our /proc; one on another, through its agent.
    if (const AgentHub::RemoteRank* remote = Remote(r)) {
      if (!remote->gone) continue;
    } else {
      if (p.host.empty() || p.host != hostname_) continue;
      if (IsAlive(static_cast<pid_t>(*p.pid))) continue;
    }
    // The trace was read before the process was looked up: a rank that wrote its footer and
    // exited in between has it in the file now (a rank writes it before it exits).
    if (!read_again) {
      if (watcher_.Poll()) last_progress_ = Clock::now();
      read_again = true;
    }
    if (!p.footer) vanished_ranks_.push_back(r);
  }
  if (!vanished_ranks_.empty()) vanished_at_ = Clock::now();
}

void LaunchRun::CheckLauncherProcess() {
  const auto status = tree_.Poll(pids_[0]);
  if (!status) {
    CheckVanishedRanks();
    return;
  }
  ended_[0] = true;
  const char* launcher = ToString(spec_.kind);  // the job launcher's program name
  watcher_.Poll();
  const std::string output = ReadFileTail(commands_[0].output, 256 * 1024);

  if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
    for (RankExit& e : report_.ranks) {
      e.exit_code = 0;
      const RankProgress& p = watcher_.rank(e.rank);
      if (p.file_seen && !p.footer) {
        e.note = "exited with code 0 before writing its trace footer";
        failed_ranks_.push_back(e.rank);
      }
    }
    ending_ = failed_ranks_.empty() ? LaunchEnding::kClean : LaunchEnding::kCrash;
    return;
  }

  const LauncherOutputFacts facts = ParseLauncherOutput(output);
  if (facts.launch_error) {
    ending_ = LaunchEnding::kLaunchFailed;
    report_.message = std::string(launcher) + " could not start the ranks: " + *facts.launch_error;
    return;
  }
  for (const LauncherRankFailure& f : facts.failures) {
    if (f.rank < 0 || f.rank >= spec_.ranks) continue;
    RankExit& e = report_.ranks[static_cast<size_t>(f.rank)];
    e.exit_code = f.exit_code;
    e.signal = f.signal;
    // Open MPI's own sentences already start with "mpirun noticed ..."; srun's with "srun:".
    e.note = f.message.rfind(launcher, 0) == 0 ? f.message : std::string(launcher) + ": " + f.message;
    failed_ranks_.push_back(f.rank);
  }
  if (!failed_ranks_.empty()) {
    ending_ = LaunchEnding::kCrash;
    return;
  }
  bool any_trace = false;
  for (int r = 0; r < spec_.ranks; ++r) any_trace = any_trace || watcher_.rank(r).file_seen;
  if (!any_trace) {
    ending_ = LaunchEnding::kLaunchFailed;
    report_.message = std::string(launcher) + " " + DescribeWaitStatus(*status) + " before any rank wrote its trace: " +
                      LastLines(output, 6);
    return;
  }
  // The launcher failed without naming a rank: the ranks that did not finish their trace are
  // the candidates.
  for (int r = 0; r < spec_.ranks; ++r) {
    if (!watcher_.rank(r).footer) {
      report_.ranks[static_cast<size_t>(r)].note =
          std::string(launcher) + " " + DescribeWaitStatus(*status) + " and this rank's trace has no footer";
      failed_ranks_.push_back(r);
    }
  }
  ending_ = LaunchEnding::kCrash;
  const std::string last_lines = LastLines(output, 6);
  if (failed_ranks_.empty() && WIFEXITED(*status)) {
    // Every rank finished its trace, and one of them then exited non-zero. Open MPI 4 names it;
    // Open MPI 5 (prterun) names the rank only while others still run: when the rank that exits
    // non-zero is the last to end, it prints nothing and only its own exit status carries the code.
    report_.message = std::string(launcher) + " " + DescribeWaitStatus(*status) +
                      " without naming a rank, after every rank had written its trace to the end: a rank exited "
                      "with that code after its last step" +
                      (last_lines.empty() ? std::string() : ": " + last_lines);
    return;
  }
  report_.message = std::string(launcher) + " " + DescribeWaitStatus(*status) + ": " + last_lines;
}

std::string LaunchRun::FullDiskError() const {
  struct statvfs fs = {};
  if (::statvfs(spec_.trace_dir.c_str(), &fs) != 0) return "";
  const unsigned long long free_bytes = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= kFullDiskBytes) return "";
  return " (" + std::to_string(free_bytes) + " bytes free): its trace could not be written";
}

bool LaunchRun::CheckStartup() {
  if (started_at_) return true;
  std::vector<int> waiting;
  for (int r = 0; r < spec_.ranks; ++r) {
    if (!HasStarted(watcher_.rank(r))) waiting.push_back(r);
  }
  if (waiting.empty()) {
    started_at_ = Clock::now();
    return true;
  }
  if (spawns_.newest()) {
    CheckSpawned();
    return false;
  }
  if (spec_.startup_timeout_s > 0 && SecondsSince(t0_) > spec_.startup_timeout_s) {
    report_.stalled_ranks = watcher_.BehindAtStartup(waiting);
    ending_ = LaunchEnding::kStartupTimeout;
  }
  return false;
}

// Its start-up is timed from its spawning.json, its hangs as the launched ranks' are. The
// launched process's own phases around its spawnings (before the first, between two, after the
// last: loading, a checkpoint, an evaluation) are bounded by startup_timeout_s each, as a
// start-up is: it records nothing then, so nothing tells a phase that works from one that hangs.
void LaunchRun::CheckSpawned() {
  const SpawnWatch::World& w = *spawns_.newest();
  const double limit_s = spec_.startup_timeout_s;
  if (w.ended) {
    if (limit_s > 0 && SecondsSince(*w.ended) > limit_s) {
      for (int r = 0; r < spec_.ranks; ++r) report_.stalled_ranks.push_back(r);
      ending_ = LaunchEnding::kStartupTimeout;
    }
    return;
  }
  if (!w.started) {
    if (limit_s > 0 && SecondsSince(w.began) > limit_s) {
      std::vector<int> waiting;
      for (int r = 0; r < w.watcher.size(); ++r) {
        if (!HasStarted(w.watcher.rank(r))) waiting.push_back(r);
      }
      report_.stalled_ranks = w.watcher.BehindAtStartup(waiting);
      spawn_ending_ = w.spawning.index;
      ending_ = LaunchEnding::kStartupTimeout;
    }
    return;
  }
  CheckHang(w.watcher, std::max(w.last_progress, *w.started), Activities(w));
  if (ending_) spawn_ending_ = w.spawning.index;
}

void LaunchRun::DiscountUnobserved(double unobserved_s) {
  const auto by = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(unobserved_s));
  last_progress_ += by;
  spawns_.Discount(by);
  if (started_at_) *started_at_ += by;
  if (communication_error_at_) *communication_error_at_ += by;
  if (vanished_at_) *vanished_at_ += by;
  // Not t0_: the whole launch's timeout and its duration are the wall clock's.
}

bool LaunchRun::SomeRankIsEnding() {
  bool any = false;
  for (int r = 0; r < spec_.ranks; ++r) {
    if (watcher_.rank(r).footer) continue;
    const std::optional<pid_t> pid = LocalPid(r);
    if (!pid) continue;
    const std::optional<ProcStat> stat = ReadProcStat(*pid);
    if (!stat || !IsEnding(*stat)) continue;
    const std::optional<int> sig = EndingSignal(*stat);
    // Under a job launcher, a rank it stops (after a survivor's exit) ends by its signals: that
    // rank is no cause. Where lockstep started the ranks, it sends none before the launch ends.
    if (!IsDirect() && sig && (*sig == SIGTERM || *sig == SIGKILL || *sig == SIGINT || *sig == SIGHUP)) continue;
    any = true;
    ending_ranks_.emplace(r, sig);  // the first look's signal stays
  }
  for (int r = 0; hosts_ && r < spec_.ranks; ++r) {
    const AgentHub::RemoteRank* remote = Remote(r);
    if (watcher_.rank(r).footer || !remote || !remote->ending_signal) continue;
    const std::optional<int> sig = *remote->ending_signal >= 0 ? std::optional<int>(*remote->ending_signal) : std::nullopt;
    if (sig && (*sig == SIGTERM || *sig == SIGKILL || *sig == SIGINT || *sig == SIGHUP)) continue;  // its job launcher's
    any = any || !remote->gone;
    ending_ranks_.emplace(r, sig);
  }
  return any;
}

std::optional<pid_t> LaunchRun::TracePid(const RankProgress& p) const {
  if (p.pid && !p.host.empty() && p.host == hostname_) return static_cast<pid_t>(*p.pid);
  return std::nullopt;
}

std::optional<pid_t> LaunchRun::LocalPid(int r) const {
  // On several hosts every rank is seen through its node's agent, this host's included: one
  // source for each rank's CPU samples and end.
  if (hosts_) return std::nullopt;
  if (std::optional<pid_t> pid = TracePid(watcher_.rank(r))) return pid;
  if (IsDirect()) {
    for (size_t i = 0; i < commands_.size(); ++i) {
      if (command_rank_[i] == r && !ended_[i]) return pids_[i];
    }
  }
  return std::nullopt;
}

void LaunchRun::SampleCpu() {
  if (cpu_sampled_at_ && SecondsSince(*cpu_sampled_at_) < kCpuSampleS) return;
  const Clock::time_point now = Clock::now();
  cpu_sampled_at_ = now;
  const double keep_s = std::max(spec_.hang_timeout_s, 1.0) + 2 * kCpuSampleS;
  for (int r = 0; r < spec_.ranks; ++r) {
    const std::optional<pid_t> pid = LocalPid(r);
    if (!pid) continue;
    if (const std::optional<double> cpu_s = ProcessTreeCpuSeconds(*pid)) cpu_.Add(r, *pid, now, *cpu_s, keep_s);
  }
  if (SpawnWatch::World* w = spawns_.newest(); w && !w->ended) {
    for (int r = 0; r < w->watcher.size(); ++r) {
      const std::optional<pid_t> pid = TracePid(w->watcher.rank(r));
      if (!pid) continue;
      if (const std::optional<double> cpu_s = ProcessTreeCpuSeconds(*pid)) w->cpu.Add(r, *pid, now, *cpu_s, keep_s);
    }
  }
  if (!hosts_) return;
  // The agents sample their ranks each second; a sample is dated when it arrived.
  for (int r : hosts_->hub().TakeCpuSamples()) {
    const AgentHub::RemoteRank* remote = Remote(r);
    if (r >= 0 && r < spec_.ranks && remote && remote->cpu_s) {
      cpu_.Add(r, static_cast<pid_t>(remote->pid), remote->cpu_at, *remote->cpu_s, keep_s);
    }
  }
}

std::vector<RankActivity> LaunchRun::Activities() const {
  std::vector<RankActivity> out(static_cast<size_t>(spec_.ranks));
  const Clock::time_point now = Clock::now();
  for (int r = 0; r < spec_.ranks; ++r) {
    const RankProgress& p = watcher_.rank(r);
    RankActivity& a = out[static_cast<size_t>(r)];
    a.finished = p.footer;
    a.in_collective = p.in_collective;
    const AgentHub::RemoteRank* remote = Remote(r);
    if (LocalPid(r) || (remote && remote->cpu_s)) a.cpu_share = cpu_.ShareOver(r, now, spec_.hang_timeout_s);
  }
  return out;
}

std::vector<RankActivity> LaunchRun::Activities(const SpawnWatch::World& world) const {
  std::vector<RankActivity> out(static_cast<size_t>(world.watcher.size()));
  const Clock::time_point now = Clock::now();
  for (int r = 0; r < world.watcher.size(); ++r) {
    const RankProgress& p = world.watcher.rank(r);
    RankActivity& a = out[static_cast<size_t>(r)];
    a.finished = p.footer;
    a.in_collective = p.in_collective;
    if (TracePid(p)) a.cpu_share = world.cpu.ShareOver(r, now, spec_.hang_timeout_s);
  }
  return out;
}

// After start-up, once no rank's trace advanced for hang_timeout_s (counted from the end of
// start-up at the earliest): a hang when the ranks wait on each other, and after quiet_timeout_s
// when some rank still computes outside any collective (stall_judgement.h). A rank that stopped
// while the others still run is a crash or a vanished process, which the checks above report
// with its own reason.
void LaunchRun::CheckHang(const TraceWatcher& watcher, Clock::time_point since,
                          const std::vector<RankActivity>& activities) {
  const double quiet_for_s = SecondsSince(since);
  if (spec_.hang_timeout_s > 0 && quiet_for_s <= spec_.hang_timeout_s &&
      (spec_.quiet_timeout_s <= 0 || quiet_for_s <= spec_.quiet_timeout_s)) {
    return;
  }
  // Ranks that all wrote their footer are done training and only exiting (mpirun can take a
  // few seconds to reap them on a loaded machine): that is not a hang unless it lasts.
  bool all_finished = true;
  for (int r = 0; r < watcher.size(); ++r) all_finished &= watcher.rank(r).footer;
  if (all_finished) {
    const double exit_grace_s = std::max(spec_.hang_timeout_s, 10.0);
    if (spec_.hang_timeout_s > 0 && quiet_for_s > spec_.hang_timeout_s + exit_grace_s) {
      stall_ = StallVerdict{StallKind::kWaiting, {}, {}, {}, {}};
      quiet_for_s_ = quiet_for_s;
      ending_ = LaunchEnding::kHang;
    }
    return;
  }
  StallVerdict v = JudgeStall(activities, quiet_for_s, spec_.hang_timeout_s, spec_.quiet_timeout_s);
  if (v.kind == StallKind::kNone) return;
  stall_ = std::move(v);
  quiet_for_s_ = quiet_for_s;
  ending_ = LaunchEnding::kHang;
}

bool LaunchRun::WatchHosts() {
  // The agents' bytes first: the traces read below are then as fresh as what they streamed.
  if (Status s = hosts_->Poll(); !s.ok()) {
    report_.message = s.message();
    ending_ = LaunchEnding::kLaunchFailed;
    return false;
  }
  if (ranks_started_) return true;
  if (!hosts_->Ready()) {
    if (spec_.startup_timeout_s > 0 && SecondsSince(t0_) > spec_.startup_timeout_s) {
      std::string unheard;
      for (const std::string& n : hosts_->Unheard()) unheard += (unheard.empty() ? "" : ",") + n;
      report_.message = "no lockstep agent reached " + hostname_ + " from node(s) " + unheard + " within startup_timeout_s = " +
                        std::to_string(static_cast<int>(spec_.startup_timeout_s)) +
                        " s: can the nodes connect to this host? (its output: " +
                        (spec_.log_dir / "agents.log").string() + ")";
      ending_ = LaunchEnding::kLaunchFailed;
    }
    return false;
  }
  Result<LaunchCommand> cmd = hosts_->RanksCommand();
  if (!cmd.ok()) {
    report_.message = cmd.status().message();
    ending_ = LaunchEnding::kLaunchFailed;
    return false;
  }
  report_.command = cmd->ToString();
  Result<pid_t> pid = tree_.Spawn(*cmd);
  if (!pid.ok()) {
    report_.message = pid.status().message();
    ending_ = LaunchEnding::kLaunchFailed;
    return false;
  }
  commands_ = {std::move(cmd).value()};
  command_rank_ = {-1};
  pids_ = {*pid};
  ended_ = {false};
  ranks_started_ = true;
  last_progress_ = Clock::now();
  return false;
}

void LaunchRun::Watch() {
  if (hosts_ && !WatchHosts()) return;
  if (watcher_.Poll()) last_progress_ = Clock::now();
  if (spawns_.Poll(Clock::now())) last_progress_ = Clock::now();
  if (hosts_) {
    // A host that stopped answering: its ranks are lost with it, whatever the others do now.
    lost_hosts_ = hosts_->Lost(watcher_);
    if (!lost_hosts_.empty()) {
      // Every agent gone because the job itself ended (a user's scancel) is no lost node.
      if (std::string ended = hosts_->AllocationEnded(); !ended.empty()) {
        lost_hosts_.clear();
        report_.message = ended;
        ending_ = LaunchEnding::kInterrupted;
        return;
      }
      ending_ = LaunchEnding::kNodeLost;
      return;
    }
  }
  SampleCpu();
  // A rank that wrote an error footer is stopping on a harness error; the others may wait for
  // it in a collective forever: end the launch now, with its message. Except a communication
  // error, which may echo a peer that died (the crash is then that peer's): the peer's death
  // gets kLauncherReportWindowS to show first, kEndingRankWindowS while a rank's process is ending.
  for (int r = 0; r < spec_.ranks; ++r) {
    const RankProgress& p = watcher_.rank(r);
    if (p.footer && IsErrorFooterStatus(p.footer_status)) {
      if (!IsCommunicationFailure(p.footer_status)) {
        ending_ = LaunchEnding::kRankError;
        return;
      }
      if (!communication_error_at_) communication_error_at_ = Clock::now();
    }
  }
  // Looked at on every pass, before the launcher's own news: a job launcher may stop a dying rank
  // once a survivor exits, and then only an earlier look saw that it was dying first.
  const bool some_rank_ending = SomeRankIsEnding();
  if (IsDirect()) {
    CheckDirectRanks();
  } else {
    CheckLauncherProcess();
  }
  if (ending_) return;
  if (communication_error_at_ && SecondsSince(*communication_error_at_) > kLauncherReportWindowS &&
      (SecondsSince(*communication_error_at_) > kEndingRankWindowS || !some_rank_ending)) {
    ending_ = LaunchEnding::kRankError;
    return;
  }
  if (spec_.timeout_s > 0 && SecondsSince(t0_) > spec_.timeout_s) {
    ending_ = LaunchEnding::kTimeout;
    return;
  }
  if (!CheckStartup()) return;
  // A rank's process ended without its footer, and the launcher has ReportWindowS() to say how
  // (CheckVanishedRanks): the ranks that stopped moving meanwhile (blocked in a collective with
  // the dead peer) are its victims, not a hang, even when hang_timeout_s is shorter.
  if (vanished_at_) return;
  CheckHang(watcher_, std::max(last_progress_, *started_at_), Activities());
}

void LaunchRun::Finish() {
  // Which ranks the launcher is about to stop (as opposed to ranks that ended on their own).
  still_running_.assign(static_cast<size_t>(spec_.ranks), false);
  if (IsDirect()) {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (ended_[i]) continue;
      // A rank that ended since the last look ended on its own: how, is part of the report.
      if (const auto status = tree_.Poll(pids_[i])) {
        RecordDirectExit(i, *status);
      } else {
        still_running_[static_cast<size_t>(command_rank_[i])] = true;
      }
    }
  } else if (!ended_.empty() && !ended_[0]) {
    for (int r = 0; r < spec_.ranks; ++r) still_running_[static_cast<size_t>(r)] = !watcher_.rank(r).footer;
  }
  tree_.KillAll(std::chrono::milliseconds(static_cast<int64_t>(spec_.kill_grace_s * 1000)));
  // The agents stop what is left of the launch on their nodes and send the last bytes.
  if (hosts_) hosts_->Finish(std::max(10.0, spec_.hosts.node_timeout_s + 5.0));
  // Every writer is gone: a killed rank's trace keeps only its data, not the zeros its writer
  // had reserved ahead (mapped_append_file.h), so --out holds exactly what was recorded.
  for (int r = 0; r < spec_.ranks; ++r) (void)CutReservedTail(RankTracePath(spec_.trace_dir, r));
  watcher_.Poll();
  if (SpawnWatch::World* w = spawns_.newest()) {
    for (int r = 0; r < w->watcher.size(); ++r) (void)CutReservedTail(RankTracePath(w->spawning.dir, r));
    w->watcher.Poll();
  }
  report_ = JudgeLaunch(Observation());
  report_.spawning = spawn_ending_;
}

LaunchObservation LaunchRun::Observation() const {
  LaunchObservation seen;
  seen.ending = *ending_;
  seen.kind = spec_.kind;
  seen.direct = IsDirect();
  seen.failed_ranks = failed_ranks_;
  seen.ending_ranks = ending_ranks_;
  seen.stall = stall_;
  seen.quiet_for_s = quiet_for_s_;
  seen.watcher_stalled = watcher_.StalledRanks();
  seen.startup_stalled = report_.stalled_ranks;
  seen.interrupt_signal = interrupt_signal_;
  seen.launcher_message = report_.message;
  seen.hang_timeout_s = spec_.hang_timeout_s;
  seen.quiet_timeout_s = spec_.quiet_timeout_s;
  seen.startup_timeout_s = spec_.startup_timeout_s;
  seen.timeout_s = spec_.timeout_s;
  seen.duration_s = SecondsSince(t0_);
  seen.command = report_.command;
  seen.lost_hosts = lost_hosts_;
  if (spawn_ending_ > 0) {
    // The ending is of the spawned world: its ranks, as its traces show them. The launcher stops
    // them with the launched process; none ended on its own (that would be mp.spawn's crash).
    const TraceWatcher& spawned = spawns_.newest()->watcher;
    seen.failed_ranks.clear();
    seen.ending_ranks.clear();
    seen.watcher_stalled = spawned.StalledRanks();
    for (int r = 0; r < spawned.size(); ++r) {
      RankObservation o;
      o.progress = spawned.rank(r);
      o.exit.rank = r;
      o.exit.host = o.progress.host;
      o.still_running = !o.progress.footer;
      o.describe = spawned.Describe(r);
      seen.ranks.push_back(std::move(o));
    }
    return seen;
  }
  const std::string full_disk = FullDiskError();
  for (int r = 0; r < spec_.ranks; ++r) {
    RankObservation o;
    o.progress = watcher_.rank(r);
    o.exit = report_.ranks[static_cast<size_t>(r)];
    o.exit.host = o.progress.host;
    o.still_running = still_running_[static_cast<size_t>(r)];
    o.describe = watcher_.Describe(r);
    const bool failed = std::find(failed_ranks_.begin(), failed_ranks_.end(), r) != failed_ranks_.end();
    if (failed && !o.progress.footer) {
      if (!full_disk.empty()) o.full_disk_error = "no space left on the file system of " + RankTracePath(spec_.trace_dir, r).string() + full_disk;
      o.log_error = RankErrorFromLog(RankLogPath(spec_.log_dir, r));
    }
    seen.ranks.push_back(std::move(o));
  }
  return seen;
}

LaunchReport LaunchRun::Run() {
  if (Status s = Prepare(); !s.ok()) return Fail(s.message());
  // Installed before the first process starts, so an early Ctrl-C still ends everything.
  InterruptGuard guard;
  if (Status s = Start(); !s.ok()) {
    tree_.KillAll(std::chrono::milliseconds(static_cast<int64_t>(spec_.kill_grace_s * 1000)));
    return Fail(s.message());
  }
  last_progress_ = Clock::now();
  Clock::time_point last_pass = last_progress_;
  while (!ending_) {
    pollfd pfd{guard.fd(), POLLIN, 0};
    const int rc = ::poll(&pfd, guard.fd() >= 0 ? 1 : 0, kPollMs);
    (void)rc;  // EINTR and timeouts alike: look at the flag and the processes
    if (guard.signal() != 0) {
      interrupt_signal_ = guard.signal();
      ending_ = LaunchEnding::kInterrupted;
      break;
    }
    const Clock::time_point now = Clock::now();
    const double unobserved_s = std::chrono::duration<double>(now - last_pass).count() - kStarvedAfterS;
    if (unobserved_s > 0) DiscountUnobserved(unobserved_s);
    last_pass = now;
    Watch();
  }
  Finish();
  return report_;
}

}  // namespace


Result<LaunchReport> Launch(const LaunchSpec& in, const ProgressCallback& on_progress) {
  if (in.ranks < 1) return InvalidArgumentError("launch: ranks must be at least 1, got " + std::to_string(in.ranks));
  if (in.rank_command.empty() || in.rank_command[0].empty()) return InvalidArgumentError("launch: no rank command");
  if (in.trace_dir.empty() || in.log_dir.empty()) return InvalidArgumentError("launch: trace_dir and log_dir are required");
  LaunchSpec spec = in;
  if (spec.launch_id.empty()) spec.launch_id = NewLaunchId();
  LaunchRun run(std::move(spec), on_progress);
  return run.Run();
}

}  // namespace lockstep
