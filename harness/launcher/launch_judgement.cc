#include "harness/launcher/launch_judgement.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "harness/trace/footer_status.h"

namespace lockstep {
namespace {

std::string Join(const std::vector<int>& v, const char* sep = ",") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class Judgement {
 public:
  explicit Judgement(const LaunchObservation& seen) : seen_(seen), failed_(seen.failed_ranks) {
    for (const RankObservation& r : seen.ranks) report_.ranks.push_back(r.exit);
    report_.stalled_ranks = seen.startup_stalled;
    report_.message = seen.launcher_message;
  }

  LaunchReport Run();

 private:
  const RankProgress& progress(int r) const { return seen_.ranks[static_cast<size_t>(r)].progress; }
  RankExit& exit(int r) { return report_.ranks[static_cast<size_t>(r)]; }
  int ranks() const { return static_cast<int>(seen_.ranks.size()); }
  // Ranks that stopped on an error of the harness: an error footer, or a failed rank without a
  // footer whose trace's disk was full or whose log's last lockstep-rank line says so (never an
  // exit code, which the program owns). Sets their RankExit::error.
  std::vector<int> RankErrors();
  // Of `rank_errors`, the collectives that failed because another rank died first (gloo says
  // "Connection reset by peer" on the survivors): that rank's crash, not a harness error. When
  // every rank error is such a failure and some rank died on its own, marks them
  // RankExit::failed_after_peer, makes the dead the failed ranks and returns true.
  bool FailuresAfterAPeersDeath(const std::vector<int>& rank_errors);
  std::string DescribeStall() const;

  const LaunchObservation& seen_;
  std::vector<int> failed_;
  LaunchEnding ending_ = LaunchEnding::kClean;
  LaunchReport report_;
};

std::vector<int> Judgement::RankErrors() {
  std::vector<int> errors;
  for (int r = 0; r < ranks(); ++r) {
    const RankObservation& o = seen_.ranks[static_cast<size_t>(r)];
    const RankProgress& p = o.progress;
    RankExit& e = exit(r);
    const bool failed = Contains(failed_, r);
    // The harness's error channel is the trace footer (and lockstep-rank's own last words), never
    // an exit code: 2 and 3 are codes any program may return (a user's sys.exit(3) is a crash of
    // that rank, not a harness error).
    if (p.footer && IsErrorFooterStatus(p.footer_status)) {
      e.error = p.footer_status;
    } else if (failed && !p.footer && !o.full_disk_error.empty()) {
      // The trace could not be written: the harness's I/O failure, not the program's crash.
      e.error = o.full_disk_error;
    } else if (failed && !p.footer) {
      // mpirun may name another rank first, or not say the code: the rank's own last words decide.
      e.error = o.log_error;
    }
    if (!e.error.empty()) errors.push_back(r);
  }
  return errors;
}

bool Judgement::FailuresAfterAPeersDeath(const std::vector<int>& rank_errors) {
  if (rank_errors.empty()) return false;
  for (int r : rank_errors) {
    if (!IsCommunicationFailure(exit(r).error)) return false;
  }
  std::vector<int> died;  // on their own, with no error of the harness
  for (int r : failed_) {
    if (!Contains(rank_errors, r)) died.push_back(r);
  }
  if (died.empty()) {
    // No peer died, but one may have left: it ended on its own with a clean footer (a user's
    // sys.exit(0) mid-run) while the others waited in a collective it never began. That rank is
    // the cause, not the first one whose collective failed.
    for (int r = 0; r < ranks(); ++r) {
      if (Contains(rank_errors, r)) continue;
      const RankProgress& p = progress(r);
      if (!p.footer || IsErrorFooterStatus(p.footer_status) || seen_.ranks[static_cast<size_t>(r)].still_running) continue;
      bool left_them_waiting = false;
      for (int q : rank_errors) {
        for (const auto& [group, seq] : progress(q).begun_seq_by_group) {
          auto mine = p.begun_seq_by_group.find(group);
          if (mine == p.begun_seq_by_group.end() || mine->second < seq) left_them_waiting = true;
        }
      }
      if (!left_them_waiting) continue;
      RankExit& e = exit(r);
      e.note = (e.exit_code ? "exited with code " + std::to_string(*e.exit_code) : std::string("ended")) +
               " while its peers waited in a collective it never began";
      e.left_peers_waiting = true;
      died.push_back(r);
    }
  }
  if (died.empty()) {
    // No death was reported, but a rank's process was seen ending (its end slow: a core dump, a
    // GPU context torn down) when its peers' collectives failed: a job launcher named a survivor
    // first and stopped the job, or the rank had not been reaped when the launch ended.
    for (const auto& [r, sig] : seen_.ending_ranks) {
      if (Contains(rank_errors, r) || progress(r).footer) continue;
      RankExit& e = exit(r);
      if (sig && !e.signal) e.signal = *sig;
      e.note = (sig ? "killed by signal " + std::to_string(*sig) + " (" + SignalDescription(*sig) +
                          "), seen as its process ended"
                    : std::string("its process was seen ending")) +
               " as its peers' collectives failed; " +
               (seen_.direct ? std::string("it had not ended when the launch did")
                             : std::string(ToString(seen_.kind)) + " named a peer first");
      died.push_back(r);
    }
  }
  if (died.empty()) return false;
  for (int r : rank_errors) {
    RankExit& e = exit(r);
    e.failed_after_peer = true;
    e.note = "its collective failed after rank " + Join(died) + " died (" + e.error + ")";
    e.error.clear();
  }
  failed_ = died;
  return true;
}

std::string Judgement::DescribeStall() const {
  std::ostringstream msg;
  auto ranks = [](const std::vector<int>& v) { return std::string(v.size() == 1 ? "rank " : "ranks ") + Join(v); };
  const StallVerdict& stall = seen_.stall;
  if (stall.kind == StallKind::kQuietTooLong) {
    const std::vector<int> busy = BusyRanks(stall);
    std::optional<int64_t> after;
    for (int r : busy) {
      const std::optional<int64_t> s = progress(r).last_step;
      if (s && (!after || *s < *after)) after = s;
    }
    msg << "no trace progress for " << static_cast<int64_t>(seen_.quiet_for_s) << " s while " << ranks(busy)
        << (busy.size() == 1 ? " was" : " were") << " still "
        << (stall.unseen.empty() ? "using CPU" : "running (CPU use not visible from this host)")
        << " outside any collective, after step " << (after ? std::to_string(*after) : std::string("0"))
        << ": a phase without collectives (evaluation, checkpointing, data loading?) longer than quiet_timeout_s = "
        << seen_.quiet_timeout_s << " s (--quiet-timeout sets it; no rank waited on another)";
  } else {
    msg << "no trace progress for " << static_cast<int64_t>(seen_.quiet_for_s) << " s (hang_timeout_s = "
        << seen_.hang_timeout_s << " s, --hang-timeout sets it)";
    if (!stall.waiting.empty()) msg << "; " << ranks(stall.waiting) << " waited inside a collective";
    if (!stall.idle.empty()) {
      msg << "; " << ranks(stall.idle) << " neither recorded progress nor used CPU outside any collective";
    }
    if (stall.waiting.empty() && stall.idle.empty()) msg << "; every rank had finished but did not exit";
    msg << "; stalled ranks: "
        << (report_.stalled_ranks.empty() ? std::string("none behind the others") : Join(report_.stalled_ranks));
  }
  return msg.str();
}

LaunchReport Judgement::Run() {
  ending_ = seen_.ending;
  // A failure of the harness on a rank is no crash of the system under test (nor is what the
  // others did after it stopped).
  std::vector<int> rank_errors;
  if (ending_ == LaunchEnding::kCrash || ending_ == LaunchEnding::kRankError) {
    rank_errors = RankErrors();
    if (FailuresAfterAPeersDeath(rank_errors)) {
      ending_ = LaunchEnding::kCrash;
      rank_errors.clear();
    } else if (!rank_errors.empty()) {
      ending_ = LaunchEnding::kRankError;
      for (int r : rank_errors) {
        if (!Contains(failed_, r)) failed_.push_back(r);
      }
    }
  }

  // A lost host: its ranks are lost with it, and what the others did after (a collective that
  // failed, a wait the launcher ended) is no fault of theirs.
  std::map<int, std::string> lost_on;
  for (const LostHost& h : seen_.lost_hosts) {
    for (int r : h.ranks) lost_on[r] = h.host;
  }
  std::string lost_names;
  for (const LostHost& h : seen_.lost_hosts) lost_names += (lost_names.empty() ? "" : ", ") + h.host;
  if (ending_ == LaunchEnding::kNodeLost) {
    for (RankExit& e : report_.ranks) {
      const RankProgress& p = progress(e.rank);
      if (auto it = lost_on.find(e.rank); it != lost_on.end()) {
        e.note = "on " + it->second + ", which was lost";
      } else if (p.footer && IsErrorFooterStatus(p.footer_status)) {
        e.failed_after_peer = true;
        e.note = "its collective failed after " + lost_names + " was lost (" + p.footer_status + ")";
      } else if (!p.footer) {
        e.killed_by_launcher = true;
        e.note = "stopped by the launcher after " + lost_names + " was lost";
      }
    }
    failed_.clear();
  }

  const bool failed = !failed_.empty();
  for (RankExit& e : report_.ranks) {
    const RankObservation& o = seen_.ranks[static_cast<size_t>(e.rank)];
    const RankProgress& p = o.progress;
    e.last_step = p.last_step;
    e.last_collective_begun = p.last_begun;
    e.last_collective_completed = p.last_completed;
    e.trace_finished = p.footer;
    const bool named_failure = Contains(failed_, e.rank);
    // Under a job launcher (mpirun, srun, torchrun), after a rank's failure it stopped the others itself.
    const bool stopped_by_job_launcher = !seen_.direct && failed && !named_failure && !p.footer;
    if ((o.still_running || stopped_by_job_launcher) && !named_failure && !e.failed_after_peer &&
        ending_ != LaunchEnding::kNodeLost) {
      e.killed_by_launcher = true;
      const std::string why = ending_ == LaunchEnding::kCrash || ending_ == LaunchEnding::kRankError
                                  ? "rank " + Join(failed_) + " failed"
                                  : std::string("the launch ended: ") + ToString(ending_);
      e.note = "stopped by the launcher after " + why;
      if (ending_ == LaunchEnding::kHang || ending_ == LaunchEnding::kTimeout) e.note += "; " + o.describe;
    }
  }

  std::ostringstream msg;
  switch (ending_) {
    case LaunchEnding::kClean:
      msg << "all " << ranks() << " ranks finished";
      break;
    case LaunchEnding::kCrash:
      for (size_t i = 0; i < failed_.size(); ++i) {
        const RankExit& e = report_.ranks[static_cast<size_t>(failed_[i])];
        msg << (i ? "; " : "") << "rank " << e.rank << ": " << e.note << "; last step "
            << (e.last_step ? std::to_string(*e.last_step) : std::string("none"));
      }
      for (const RankExit& e : report_.ranks) {
        if (e.failed_after_peer) msg << "; rank " << e.rank << ": " << e.note;
      }
      if (!report_.message.empty()) msg << " (" << report_.message << ")";
      break;
    case LaunchEnding::kHang: {
      if (seen_.stall.kind == StallKind::kQuietTooLong) {
        report_.stalled_ranks = BusyRanks(seen_.stall);
      } else {
        report_.stalled_ranks = seen_.watcher_stalled;
        // Behind no one, yet idle (while the others wait, or with them): the ranks nothing moves.
        if (report_.stalled_ranks.empty()) report_.stalled_ranks = seen_.stall.idle;
      }
      msg << DescribeStall();
      for (const RankObservation& o : seen_.ranks) msg << "\n  " << o.describe;
      break;
    }
    case LaunchEnding::kStartupTimeout: {
      const std::vector<int>& named = report_.stalled_ranks;
      msg << "start-up timeout: rank" << (named.size() == 1 ? " " : "s ") << Join(named)
          << " had not recorded step 0 (communicator, model, initial broadcast) after startup_timeout_s = "
          << seen_.startup_timeout_s << " s";
      std::vector<int> victims;
      for (int r = 0; r < ranks(); ++r) {
        const RankProgress& p = progress(r);
        if (!Contains(named, r) && !p.last_step && !p.footer) victims.push_back(r);
      }
      if (!victims.empty()) {
        msg << " (rank" << (victims.size() == 1 ? " " : "s ") << Join(victims) << " wait"
            << (victims.size() == 1 ? "s" : "") << " for " << (named.size() == 1 ? "it" : "them") << " in a collective)";
      }
      for (const RankObservation& o : seen_.ranks) msg << "\n  " << o.describe;
      break;
    }
    case LaunchEnding::kRankError:
      for (size_t i = 0; i < rank_errors.size(); ++i) {
        msg << (i ? "; " : "") << "rank " << rank_errors[i] << " stopped on a harness error: "
            << report_.ranks[static_cast<size_t>(rank_errors[i])].error;
      }
      break;
    case LaunchEnding::kTimeout:
      msg << "the launch ran past its timeout of " << seen_.timeout_s << " s";
      for (const RankObservation& o : seen_.ranks) msg << "\n  " << o.describe;
      break;
    case LaunchEnding::kInterrupted:
      // Not by a signal to lockstep: by the end of the job it ran in (the watch loop says which).
      if (seen_.interrupt_signal == 0 && !report_.message.empty()) {
        msg << report_.message;
      } else {
        msg << "interrupted by " << SignalDescription(seen_.interrupt_signal) << "; the ranks were stopped";
      }
      break;
    case LaunchEnding::kLaunchFailed:
      msg << report_.message;
      break;
    case LaunchEnding::kNodeLost:
      for (size_t i = 0; i < seen_.lost_hosts.size(); ++i) {
        const LostHost& h = seen_.lost_hosts[i];
        msg << (i ? "; " : "") << "node lost: " << h.host << " ("
            << (h.ranks.empty() ? std::string("no rank") : (h.ranks.size() == 1 ? "rank " : "ranks ") + Join(h.ranks, ", "))
            << "), last heard at step " << (h.last_step ? std::to_string(*h.last_step) : std::string("none")) << " ("
            << static_cast<int64_t>(h.silent_s) << " s without a word from its agent)";
      }
      break;
  }
  report_.lost_hosts = seen_.lost_hosts;
  report_.ending = ending_;
  report_.message = msg.str();
  report_.duration_s = seen_.duration_s;
  report_.command = seen_.command;
  return report_;
}

}  // namespace

std::string SignalDescription(int sig) {
  const char* s = ::strsignal(sig);
  return s ? std::string(s) : "signal " + std::to_string(sig);
}

LaunchReport JudgeLaunch(const LaunchObservation& seen) { return Judgement(seen).Run(); }

}  // namespace lockstep
