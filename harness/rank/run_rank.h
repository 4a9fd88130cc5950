// One rank of a scenario: discovery, communicator, trainer, trace. `lockstep-rank` is a thin
// main() around RunRank; the launcher starts N of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/core/exit_code.h"
#include "harness/rank/tensor_dump.h"

namespace lockstep {

struct RankOptions {
  std::filesystem::path scenario_file;  // resolved by the runner (scenario_writer.h): read as it is
  std::filesystem::path trace_dir;  // writes rank-<r>.trace here
  bool reference = false;           // the 1-rank variant of the scenario (same global batch)
  bool reference_split = false;     // ... computed in the N ranks' pieces (the noise measurement)
  bool fail_fast = false;           // all-gather each step's digests and stop at a mismatch
  std::optional<int64_t> stop_after_step;  // stop cleanly (footer, exit 0) after recording this step
  TensorDumpRequest dump;                  // tensors saved at stop_after_step (`lockstep repro`)
};

// Runs to the end of the scenario; errors are printed to stderr and written to the trace footer.
ExitCode RunRank(const RankOptions& options);

}  // namespace lockstep
