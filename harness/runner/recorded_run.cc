#include "harness/runner/recorded_run.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "checkers/checker_registry.h"
#include "checkers/checker_run.h"
#include "checkers/streamed_traces.h"
#include "harness/core/untrusted_input.h"
#include "harness/result/run_result_json.h"
#include "harness/result/scenario_series.h"
#include "harness/runner/run_directory.h"
#include "harness/trace/trace_stream.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// The rank of a file named TraceFileName(rank), if it is one.
std::optional<int> TraceFileRank(const std::string& name) {
  const std::string prefix = "rank-", suffix = ".trace";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const int rank = std::stoi(digits);
  if (TraceFileName(rank) != name) return std::nullopt;  // "rank-01.trace" is no rank's file
  return rank;
}

// Scenario folders under `dir` (ids may hold '/': inject/ddp/bitflip): a folder whose traces/
// holds rank files is one, and what is inside it (reference/, repeat/, ...) is its own.
void FindScenarioFolders(const fs::path& dir, const std::string& prefix, int depth, std::vector<std::string>* found) {
  constexpr int kMaxDepth = 8;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string id = prefix + entry.path().filename().string();
    if (HighestTraceRank(entry.path() / "traces")) {
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

std::optional<int> HighestTraceRank(const fs::path& dir) {
  std::optional<int> highest;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto rank = TraceFileRank(entry.path().filename().string())) highest = std::max(highest.value_or(0), *rank);
  }
  return highest;
}

std::string UnreadableTraces(const std::vector<RankTrace>& traces, const fs::path& dir) {
  std::string out;
  for (const RankTrace& t : traces) {
    if (t.missing || !t.header.schema.empty()) continue;
    const std::string what = t.truncated && !t.truncation_note.empty()
                                 ? t.truncation_note
                                 : (dir / TraceFileName(t.header.rank)).string() + ":1: no header record";
    out += (out.empty() ? "" : "; ") + what;
  }
  if (!out.empty()) out = "unreadable trace (no header): " + out;
  return out;
}

Result<std::vector<RecordedScenario>> FindRecordedScenarios(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return InvalidArgumentError(dir.string() + ": not a directory");
  for (const fs::path& traces : {dir, dir / "traces"}) {
    if (!HighestTraceRank(traces)) continue;
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

ScenarioResult CheckRecordedScenario(const RecordedScenario& recorded, std::optional<int> ranks) {
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult result;
  result.id = recorded.id;
  result.run_dir = recorded.trace_dir.parent_path().string();
  result.mode = "recorded";
  auto finish = [&](ScenarioResult r) {
    r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  auto error = [&](const std::string& reason) {
    result.outcome = Outcome::kError;
    result.reason = reason;
    return finish(result);
  };

  const std::optional<int> highest = HighestTraceRank(recorded.trace_dir);
  int world = ranks.value_or(highest.value_or(-1) + 1);
  if (highest && *highest >= kMaxWorldSize) {
    return error((recorded.trace_dir / TraceFileName(*highest)).string() + ": rank " + std::to_string(*highest) +
                 " is past the most ranks lockstep reads (" + std::to_string(kMaxWorldSize) + ")");
  }
  if (!ranks) {
    // Rank 0's header knows the world size, so a missing last rank is still noticed. The header
    // is input: its claim is bounded before anything is sized by it.
    const fs::path first_file = recorded.trace_dir / TraceFileName(0);
    if (Result<TraceHeader> first = HeaderOf(first_file); first.ok()) {
      if (first->world_size > kMaxWorldSize) {
        return error(first_file.string() + ":1: header field world_size " + std::to_string(first->world_size) +
                     " is past the most ranks lockstep reads (" + std::to_string(kMaxWorldSize) + ")");
      }
      world = std::max(world, first->world_size);
    }
  }
  if (world < 1) return error(recorded.trace_dir.string() + ": no " + TraceFileName(0));
  if (highest && *highest >= world) {
    return error((recorded.trace_dir / TraceFileName(*highest)).string() + " is past --ranks " + std::to_string(world));
  }
  {
    // Missing ranks are named before any trace is opened: what is read is bounded by the files
    // that are there, whatever world size a header claims.
    std::vector<std::string> missing;
    int count = 0;
    std::error_code ec;
    for (int r = 0; r < world; ++r) {
      const fs::path file = recorded.trace_dir / TraceFileName(r);
      if (fs::exists(fs::symlink_status(file, ec))) continue;
      ++count;
      if (missing.size() < 8) missing.push_back(file.string());
    }
    if (count > 0) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      if (count > static_cast<int>(missing.size())) list += " and " + std::to_string(count - missing.size()) + " more";
      return error("no trace for " + std::to_string(count) + " of " + std::to_string(world) + " ranks: " + list +
                   (ranks ? "" : " (the world size comes from rank 0's header field world_size; --ranks sets it)"));
    }
  }
  // Every checker that judges from traces alone, fed as the traces stream (checkers/streamed_traces.h).
  const std::vector<std::string> checks = CheckerNames();
  CheckerRunOptions options;
  std::vector<std::string> judged;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(checks)) {
    std::string why = WhyNotWithoutScenario(*checker, /*have_launch=*/false);
    if (!why.empty()) options.skip[std::string(checker->name())] = why;
    else judged.emplace_back(checker->name());
  }
  Result<StreamedTraces> streamed = ReadTracesFor(judged, recorded.trace_dir, world);
  if (!streamed.ok()) return error(streamed.status().ToString());
  const std::vector<RankTrace>* traces = &streamed->traces;
  result.ranks = world;
  if (std::string unreadable = UnreadableTraces(*traces, recorded.trace_dir); !unreadable.empty()) {
    return error(unreadable);
  }

  std::vector<std::string> missing;
  int64_t steps = -1;
  for (const RankTrace& t : *traces) {
    if (t.missing) missing.push_back((recorded.trace_dir / TraceFileName(t.header.rank)).string());
    for (const StepRecord& s : t.steps) steps = std::max(steps, s.step);
    if (result.backend.empty()) result.backend = t.header.backend;
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return error("no trace for " + std::to_string(missing.size()) + " of " + std::to_string(world) + " ranks: " + list +
                 (ranks ? "" : " (the world size comes from rank 0's header; --ranks sets it)"));
  }
  if (steps < 0) return error("no rank recorded a step in " + recorded.trace_dir.string() + ": nothing to check");
  result.steps = steps;

  Scenario scenario;
  scenario.name = recorded.id;
  scenario.ranks = world;
  scenario.steps = steps;
  scenario.checks = checks;
  LaunchReport launch;  // none: no checker that needs one runs
  CheckContext context{scenario, *traces, launch};
  context.steps_without_tensors = !streamed->whole;
  options.judges = streamed->judges_by_name();
  CheckerRun checked = RunCheckers(scenario.checks, context, {}, options);
  result.findings = std::move(checked.findings);
  result.checkers = std::move(checked.verdicts);
  result.outcome = checked.expectation.outcome;
  result.reason = checked.expectation.reason;
  result.series = std::move(streamed->series);
  return finish(result);
}

}  // namespace lockstep
