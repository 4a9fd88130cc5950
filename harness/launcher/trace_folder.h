// A folder of rank-<r>.trace files (TraceFileName): which ranks it holds.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

// The rank of a file named TraceFileName(rank), if it is one ("rank-01.trace" is no rank's file).
std::optional<int> TraceFileRank(const std::string& name);

// The highest rank with a rank-<r>.trace file in `dir`, if any (other names do not count).
std::optional<int> HighestTraceRank(const std::filesystem::path& dir);

// One spawning of a program that starts its own ranks (torch.multiprocessing.spawn under
// `lockstep exec --ranks 1`): the probe gives spawning k the folder <trace dir>/spawn-<k>/, with
// spawning.json (what was spawned) and the traces of the ranks it started (probe/lockstep/_spawn.py).
struct Spawning {
  int index = 0;                // k: 1 for the program's first spawning
  std::filesystem::path dir;    // spawn-<k>/
  std::string function;         // the function spawned ("demo_basic"); "" when not said
  int nprocs = 0;               // processes started; 0 when not said
  // The world its ranks declared at init_process_group: rank 0's header, else the highest trace
  // rank + 1, else nprocs (0: no trace and nothing said).
  int world = 0;
  // "spawning 2 (demo_checkpoint)": how a report names it.
  std::string Label() const;
};

// The spawnings recorded under `trace_dir`, in the order the program made them; none for a
// program that started no ranks of its own. A spawn-<k> folder without its spawning.json still
// counts (its ranks' traces are there); a spawning.json that cannot be read leaves function unsaid.
std::vector<Spawning> SpawningsIn(const std::filesystem::path& trace_dir);

// Spawning k under `trace_dir` once its spawning.json is there (the probe writes it before the
// spawning's processes start), else nullopt: one file looked up, for the launcher's watch. Its
// world is nprocs (at least 1): its ranks have declared nothing yet.
std::optional<Spawning> SpawningBegun(const std::filesystem::path& trace_dir, int k);

// Whether every rank of the spawning's world wrote its clean-exit footer (reads the traces through).
bool EveryRankEnded(const Spawning& spawning);

// The probe's refusal of a spawn under several launched ranks (<trace dir>/spawn-refused.json):
// the sentence to report; nullopt when there was none.
std::optional<std::string> RefusedSpawn(const std::filesystem::path& trace_dir);

}  // namespace lockstep
