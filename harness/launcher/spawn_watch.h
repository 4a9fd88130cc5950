// The launcher's watch of a program that starts its own ranks (torch.multiprocessing.spawn, or one
// multiprocessing.Process per rank, under `lockstep exec --ranks 1`, trace_folder.h). The process
// lockstep launched records nothing while the ranks it started train: their world is the one whose
// progress says whether the program starts, advances or hangs. One spawning at a time, the newest:
// a world's folder appears as it starts (mp.spawn makes it, or the ranks' rank 0 at
// init_process_group), and the program's next world gets the next folder.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "harness/launcher/rank_cpu.h"
#include "harness/launcher/trace_folder.h"
#include "harness/launcher/trace_watcher.h"

namespace lockstep {

class SpawnWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // The newest spawning, its ranks' traces and CPU, and the times the launcher judges it by.
  struct World {
    World(Spawning s, Clock::time_point now, const ProgressCallback& on_step)
        : spawning(std::move(s)), watcher(spawning.dir, spawning.world, on_step), cpu(spawning.world), began(now),
          last_progress(now) {}
    Spawning spawning;  // its world: nprocs ranks
    TraceWatcher watcher;
    RankCpu cpu;
    Clock::time_point began;                   // its spawning.json was seen: its start-up began
    std::optional<Clock::time_point> started;  // every rank had begun training (HasStarted)
    std::optional<Clock::time_point> ended;    // every rank had written its footer
    Clock::time_point last_progress;           // a rank's last record other than a heartbeat
  };

  // `on_step`: as TraceWatcher's, for the spawned ranks (their rank in their own world).
  SpawnWatch(std::filesystem::path trace_dir, ProgressCallback on_step)
      : trace_dir_(std::move(trace_dir)), on_step_(std::move(on_step)) {}

  // Looks for the program's next spawning and reads what the newest one's traces gained. True
  // when a spawning began or a rank of the newest made progress.
  bool Poll(Clock::time_point now);

  // The newest spawning; nullptr before the program's first.
  World* newest() { return world_.get(); }
  const World* newest() const { return world_.get(); }

  // The launcher did not run for `by` (it was starved): its windows move by as much.
  void Discount(Clock::duration by);

 private:
  std::filesystem::path trace_dir_;
  ProgressCallback on_step_;
  std::unique_ptr<World> world_;
};

}  // namespace lockstep
