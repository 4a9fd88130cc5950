#include "harness/runner/recorded_run.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "checkers/checker_registry.h"
#include "harness/core/untrusted_input.h"
#include "harness/result/run_result_json.h"
#include "harness/runner/judge.h"
#include "harness/runner/run_directory.h"
#include "harness/launcher/trace_folder.h"
#include "harness/trace/trace_stream.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// Whether `traces` is a scenario's folder of traces: rank files, or the spawn-<k>/ worlds of a
// program that started its own ranks (trace_folder.h), which Judge follows.
bool HoldsTraces(const fs::path& traces) { return HighestTraceRank(traces) || !SpawningsIn(traces).empty(); }

// Scenario folders under `dir` (ids may hold '/': inject/ddp/bitflip): a folder whose traces/
// holds rank files is one, and what is inside it (reference/, repeat/, ...) is its own.
void FindScenarioFolders(const fs::path& dir, const std::string& prefix, int depth, std::vector<std::string>* found) {
  constexpr int kMaxDepth = 8;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string id = prefix + entry.path().filename().string();
    if (HoldsTraces(entry.path() / "traces")) {
      found->push_back(id);
    } else if (depth + 1 < kMaxDepth) {
      FindScenarioFolders(entry.path(), id + "/", depth + 1, found);
    }
  }
}

// The header of a trace, read without reading the rest (a rank's trace of a long run is large).
Result<TraceHeader> HeaderOf(const fs::path& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<RankTraceStream> stream, RankTraceStream::Open(path));
  LOCKSTEP_RETURN_IF_ERROR(stream->ReadHeader());
  return stream->trace().header;
}

}  // namespace

Result<std::vector<RecordedScenario>> FindRecordedScenarios(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return InvalidArgumentError(dir.string() + ": not a directory");
  for (const fs::path& traces : {dir, dir / "traces"}) {
    if (!HoldsTraces(traces)) continue;
    // The id the program ran under (the probe's LOCKSTEP_RUN_NAME), else the scenario folder's name.
    fs::path folder = fs::absolute(traces).lexically_normal();
    if (folder.filename().empty()) folder = folder.parent_path();
    if (folder.filename() == "traces") folder = folder.parent_path();
    std::string id = folder.filename().string();
    if (Result<TraceHeader> first = HeaderOf(traces / TraceFileName(0)); first.ok() && !first->scenario_id.empty()) {
      id = first->scenario_id;
    }
    return std::vector<RecordedScenario>{{id, traces}};
  }

  // A run directory: its scenarios in report.json's order, under their ids there.
  std::vector<std::pair<std::string, std::string>> listed;  // folder, id
  if (Result<RunResult> report = ReadRunResultFile((dir / kReportFile).string()); report.ok()) {
    for (const ScenarioResult& s : report->scenarios) listed.emplace_back(s.run_dir.empty() ? s.id : s.run_dir, s.id);
  }
  std::vector<std::string> found;
  FindScenarioFolders(dir, "", 0, &found);
  std::sort(found.begin(), found.end());
  std::vector<RecordedScenario> scenarios;
  for (const auto& [folder, id] : listed) {
    if (std::find(found.begin(), found.end(), folder) != found.end()) scenarios.push_back({id, dir / folder / "traces"});
  }
  for (const std::string& folder : found) {
    const bool seen = std::any_of(listed.begin(), listed.end(), [&](const auto& l) { return l.first == folder; });
    if (!seen) scenarios.push_back({folder, dir / folder / "traces"});
  }
  if (scenarios.empty()) {
    return InvalidArgumentError(dir.string() + ": no " + TraceFileName(0) +
                                " here, in traces/ or in any <scenario>/traces/ (a folder of rank-<r>.trace files, "
                                "or the --out directory of `lockstep run` or `lockstep exec`)");
  }
  return scenarios;
}

namespace {

// How many ranks wrote the traces (--ranks, else rank 0's header or the highest file), with every
// rank's file there; or why the folder cannot be judged. Missing ranks are named before any trace
// is opened: what is read is bounded by the files that are there, whatever a header claims.
Result<int> RecordedWorld(const fs::path& dir, std::optional<int> ranks) {
  const std::optional<int> highest = HighestTraceRank(dir);
  int world = ranks.value_or(highest.value_or(-1) + 1);
  if (highest && *highest >= kMaxWorldSize) {
    return InvalidArgumentError((dir / TraceFileName(*highest)).string() + ": rank " + std::to_string(*highest) +
                                " is past the most ranks lockstep reads (" + std::to_string(kMaxWorldSize) + ")");
  }
  if (!ranks) {
    // Rank 0's header knows the world size, so a missing last rank is still noticed. The header
    // is input: its claim is bounded before anything is sized by it.
    const fs::path first_file = dir / TraceFileName(0);
    if (Result<TraceHeader> first = HeaderOf(first_file); first.ok()) {
      if (first->world_size > kMaxWorldSize) {
        return InvalidArgumentError(first_file.string() + ":1: header field world_size " +
                                    std::to_string(first->world_size) + " is past the most ranks lockstep reads (" +
                                    std::to_string(kMaxWorldSize) + ")");
      }
      world = std::max(world, first->world_size);
    }
  }
  if (world < 1) return InvalidArgumentError(dir.string() + ": no " + TraceFileName(0));
  if (highest && *highest >= world) {
    return InvalidArgumentError((dir / TraceFileName(*highest)).string() + " is past --ranks " + std::to_string(world));
  }
  std::vector<std::string> missing;
  int count = 0;
  std::error_code ec;
  for (int r = 0; r < world; ++r) {
    const fs::path file = dir / TraceFileName(r);
    if (fs::exists(fs::symlink_status(file, ec))) continue;
    ++count;
    if (missing.size() < 8) missing.push_back(file.string());
  }
  if (count == 0) return world;
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  if (count > static_cast<int>(missing.size())) list += " and " + std::to_string(count - missing.size()) + " more";
  return InvalidArgumentError("no trace for " + std::to_string(count) + " of " + std::to_string(world) + " ranks: " +
                              list +
                              (ranks ? "" : " (the world size comes from rank 0's header field world_size; --ranks sets it)"));
}

}  // namespace

ScenarioResult CheckRecordedScenario(const RecordedScenario& recorded, std::optional<int> ranks) {
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult result;
  result.id = recorded.id;
  result.run_dir = recorded.trace_dir.parent_path().string();
  result.mode = "recorded";
  // A program that started its own ranks: the process that spawned them is the one given, and
  // each spawn-<k>/ is judged as its own world (judge.cc).
  const bool spawned = !HighestTraceRank(recorded.trace_dir) && !SpawningsIn(recorded.trace_dir).empty();
  const Result<int> world = spawned ? Result<int>(1) : RecordedWorld(recorded.trace_dir, ranks);
  if (world.ok()) {
    // Every checker that judges from traces alone: there is no scenario file and no launch.
    Evidence evidence;
    evidence.scenario.name = recorded.id;
    evidence.scenario.ranks = *world;
    evidence.scenario.steps = 0;  // the traces say
    evidence.scenario.checks = CheckerNames();
    evidence.trace_dir = recorded.trace_dir;
    evidence.have_scenario_file = false;
    evidence.demand = TraceDemand::kAnyStep;
    result.ranks = *world;
    result = Judge(evidence, std::move(result));
  } else {
    result.outcome = Outcome::kError;
    result.reason = world.status().message();
  }
  result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace lockstep
