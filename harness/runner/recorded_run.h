// Traces already on disk, judged without starting anything: `lockstep check DIR`. The traces
// may come from `lockstep run` (DIR/<id>/traces/) or from the probe in someone's own program
// (a folder of rank-<r>.trace). There is no scenario file and no launch, so the checkers that
// need either are skipped with their reason (Checker::needs_scenario, needs_launch).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/result/run_result.h"

namespace lockstep {

struct RecordedScenario {
  std::string id;
  std::filesystem::path trace_dir;  // holds rank-<r>.trace
};

// The scenarios under `dir`: `dir` itself when it holds rank-<r>.trace files, `dir`/traces (one
// scenario folder of a run), else every `dir`/<id>/traces, ids with '/' included (a run
// directory: in report.json's order and under its ids when it has one, else by folder; companion
// runs inside a scenario folder are not scenarios). A single folder's id is the one rank 0's
// header names (the probe's LOCKSTEP_RUN_NAME), else the folder's. InvalidArgument naming `dir`
// when there is none.
Result<std::vector<RecordedScenario>> FindRecordedScenarios(const std::filesystem::path& dir);

// Reads the traces of ranks [0, ranks), or of as many ranks as the files and their headers' world
// size say, and judges them (judge.h) with every checker that judges from traces alone. A missing or unreadable trace,
// or no step recorded at all, is an error result (nothing was checked), never a pass.
ScenarioResult CheckRecordedScenario(const RecordedScenario& scenario, std::optional<int> ranks);

}  // namespace lockstep
