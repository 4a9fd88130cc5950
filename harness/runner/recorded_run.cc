#include "harness/runner/recorded_run.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "checkers/checker_registry.h"
#include "checkers/checker_run.h"
#include "harness/result/run_result_json.h"
#include "harness/result/scenario_series.h"
#include "harness/runner/run_directory.h"
#include "harness/trace/trace_reader.h"
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

// The highest rank with a trace file in `dir`, if any.
std::optional<int> HighestTraceRank(const fs::path& dir) {
  std::optional<int> highest;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto rank = TraceFileRank(entry.path().filename().string())) highest = std::max(highest.value_or(0), *rank);
  }
  return highest;
}

}  // namespace

Result<std::vector<RecordedScenario>> FindRecordedScenarios(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return InvalidArgumentError(dir.string() + ": not a directory");
  const std::string name = fs::absolute(dir).lexically_normal().filename().string();
  const std::string id = name.empty() ? fs::absolute(dir).lexically_normal().parent_path().filename().string() : name;
  if (HighestTraceRank(dir)) return std::vector<RecordedScenario>{{id, dir}};
  if (HighestTraceRank(dir / "traces")) return std::vector<RecordedScenario>{{id, dir / "traces"}};

  std::vector<std::string> ids;
  if (Result<RunResult> report = ReadRunResultFile((dir / kReportFile).string()); report.ok()) {
    for (const ScenarioResult& s : report->scenarios) ids.push_back(s.run_dir.empty() ? s.id : s.run_dir);
  }
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && HighestTraceRank(entry.path() / "traces")) {
      found.push_back(entry.path().filename().string());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<RecordedScenario> scenarios;
  for (const std::string& s : ids) {
    if (std::find(found.begin(), found.end(), s) != found.end()) scenarios.push_back({s, dir / s / "traces"});
  }
  for (const std::string& s : found) {
    if (std::find(ids.begin(), ids.end(), s) == ids.end()) scenarios.push_back({s, dir / s / "traces"});
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
  if (!ranks) {
    // Rank 0's header knows the world size, so a missing last rank is still noticed.
    if (Result<RankTrace> first = ReadTrace(recorded.trace_dir / TraceFileName(0)); first.ok()) {
      world = std::max(world, first->header.world_size);
    }
  }
  if (world < 1) return error(recorded.trace_dir.string() + ": no " + TraceFileName(0));
  if (highest && *highest >= world) {
    return error((recorded.trace_dir / TraceFileName(*highest)).string() + " is past --ranks " + std::to_string(world));
  }
  Result<std::vector<RankTrace>> traces = ReadTraceDir(recorded.trace_dir, world);
  if (!traces.ok()) return error(traces.status().ToString());
  result.ranks = world;

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
  scenario.checks = CheckerNames();
  LaunchReport launch;  // none: no checker that needs one runs
  CheckerRunOptions options;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(scenario.checks)) {
    std::string why = WhyNotWithoutScenario(*checker, /*have_launch=*/false);
    if (!why.empty()) options.skip[std::string(checker->name())] = why;
  }
  const CheckContext context{scenario, *traces, launch};
  CheckerRun checked = RunCheckers(scenario.checks, context, {}, options);
  result.findings = std::move(checked.findings);
  result.checkers = std::move(checked.verdicts);
  result.outcome = checked.expectation.outcome;
  result.reason = checked.expectation.reason;
  result.series = BuildSeries(*traces);
  return finish(result);
}

}  // namespace lockstep
