// How much CPU each rank's processes used lately: the launcher's evidence that a rank which
// records nothing still works (an evaluation, a checkpoint, a data loader's workers) rather than
// waits. A rank's processes are its main process, the children it reaped and every live
// descendant (data-loader workers), read from /proc on this host; a rank on another host is
// unknown.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <optional>
#include <vector>

namespace lockstep {

// The CPU seconds `pid` and its descendants have used so far (its reaped children included);
// nullopt when the process is gone.
std::optional<double> ProcessTreeCpuSeconds(pid_t pid);

// Per rank, a short history of (time, CPU seconds used so far) samples.
class RankCpu {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RankCpu(int ranks) : samples_(static_cast<size_t>(ranks > 0 ? ranks : 0)) {}

  // Adds a sample of `rank`'s processes (`pid` tells a restarted process from the one sampled
  // before: a new pid starts a new history). Samples older than `keep_s` before `now`, but the
  // newest of them, are dropped.
  void Add(int rank, pid_t pid, Clock::time_point now, double cpu_s, double keep_s);

  // The share of one core the rank used over the last `window_s` seconds before `now` (1.0: a
  // core busy all along); nullopt when the rank's samples do not reach back that far.
  std::optional<double> ShareOver(int rank, Clock::time_point now, double window_s) const;

 private:
  struct Sample {
    Clock::time_point at;
    double cpu_s;
  };
  struct History {
    pid_t pid = 0;
    std::deque<Sample> samples;
  };
  std::vector<History> samples_;
};

}  // namespace lockstep
