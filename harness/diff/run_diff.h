// `lockstep diff DIR_A DIR_B`: the scenarios of two run directories, matched by id, each pair
// compared through its traces (harness/diff/trace_diff.h).
//
// A run directory is what `lockstep run --out DIR` leaves: DIR/report.json lists the scenarios
// (id, world size, where its traces are) and DIR/<run_dir>/traces/rank-<r>.trace holds them.
// Without a report.json (a run killed before writing it) the scenarios are found by their traces:
// every folder under DIR with a traces/rank-0.trace is one, its id the folder's path under DIR and
// its world size the one in that trace's header.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/diff/trace_diff.h"

namespace lockstep {

struct RunDirScenario {
  std::string id;
  std::filesystem::path trace_dir;  // DIR/<run_dir>/traces
  int ranks = 0;
  std::string outcome;              // from report.json; empty when found by its traces
  std::string reason;               // why it was skipped or failed, from report.json
};

// The scenarios of a run directory, in report order (or sorted by id when found by traces).
// InvalidArgument for a path that is not a folder, an unreadable or invalid report.json, or a
// folder with neither a report.json nor any trace.
Result<std::vector<RunDirScenario>> IndexRunDir(const std::filesystem::path& dir);

struct RunDiffOptions {
  std::optional<std::string> scenario;  // compare only this id (it must be in both runs)
};

struct RunDiff {
  std::filesystem::path a;
  std::filesystem::path b;
  std::vector<ScenarioDiff> scenarios;  // in A's order
  std::vector<std::string> only_in_a;
  std::vector<std::string> only_in_b;

  int Count(ScenarioDiff::Verdict verdict) const;
  // Every scenario compared is identical, and at least one was compared.
  bool Identical() const;
};

// InvalidArgument (bad input, exit 2) when a directory or a trace cannot be read, when
// --scenario names an id missing from either run, and when no scenario is in both runs.
Result<RunDiff> DiffRunDirs(const std::filesystem::path& a, const std::filesystem::path& b,
                            const RunDiffOptions& options = {});

}  // namespace lockstep
