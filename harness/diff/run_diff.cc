#include "harness/diff/run_diff.h"

#include <algorithm>
#include <map>
#include <system_error>

#include "harness/result/run_result_json.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

bool HasAnyTrace(const fs::path& trace_dir, int ranks) {
  std::error_code ec;
  for (int r = 0; r < ranks; ++r) {
    if (fs::exists(trace_dir / TraceFileName(r), ec)) return true;
  }
  return false;
}

Result<std::vector<RunDirScenario>> FromReport(const fs::path& dir, const fs::path& report) {
  Result<RunResult> result = ReadRunResultFile(report.string());
  if (!result.ok()) return InvalidArgumentError(result.status().message());
  std::vector<RunDirScenario> scenarios;
  for (const ScenarioResult& s : result->scenarios) {
    RunDirScenario entry;
    entry.id = s.id;
    entry.trace_dir = dir / (s.run_dir.empty() ? s.id : s.run_dir) / "traces";
    entry.ranks = s.ranks;
    entry.outcome = ToString(s.outcome);
    entry.reason = s.reason;
    scenarios.push_back(std::move(entry));
  }
  return scenarios;
}

// Folders holding traces/rank-0.trace; `traces` and `logs` folders themselves are not searched.
Result<std::vector<RunDirScenario>> FromTraces(const fs::path& dir) {
  std::vector<RunDirScenario> scenarios;
  std::error_code ec;
  std::vector<fs::path> candidates = {dir};
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name == "traces" || name == "logs") {
      it.disable_recursion_pending();
      continue;
    }
    candidates.push_back(it->path());
  }
  if (ec) return InvalidArgumentError(dir.string() + ": " + ec.message());
  for (const fs::path& folder : candidates) {
    const fs::path first = folder / "traces" / TraceFileName(0);
    if (!fs::exists(first, ec)) continue;
    Result<RankTrace> read = ReadTrace(first);
    if (!read.ok()) return InvalidArgumentError(read.status().message()).WithContext((folder / "traces").string());
    const RankTrace& trace = *read;
    RunDirScenario entry;
    entry.trace_dir = folder / "traces";
    entry.ranks = std::max(1, trace.header.world_size);
    entry.id = folder == dir ? trace.header.scenario_id : fs::relative(folder, dir, ec).generic_string();
    if (entry.id.empty()) entry.id = folder.filename().string();
    scenarios.push_back(std::move(entry));
  }
  std::sort(scenarios.begin(), scenarios.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  return scenarios;
}

ScenarioDiff WithoutTraces(const RunDirScenario& a, const RunDirScenario& b, bool in_a, bool in_b) {
  ScenarioDiff d;
  d.id = a.id;
  d.ranks_a = a.ranks;
  d.ranks_b = b.ranks;
  d.no_traces_in = !in_a && !in_b ? "both" : (!in_a ? "A" : "B");
  for (const auto& [run, s, has] : {std::tuple{"A", &a, in_a}, std::tuple{"B", &b, in_b}}) {
    if (has) continue;
    std::string note = std::string(run) + ": no traces in " + s->trace_dir.string();
    if (!s->outcome.empty()) note += " (outcome " + s->outcome + (s->reason.empty() ? "" : ": " + s->reason) + ")";
    d.notes.push_back(std::move(note));
  }
  return d;
}

std::string Ids(const std::vector<RunDirScenario>& scenarios) {
  std::string text;
  for (const RunDirScenario& s : scenarios) text += (text.empty() ? "" : ", ") + s.id;
  return text.empty() ? "none" : text;
}

}  // namespace

Result<std::vector<RunDirScenario>> IndexRunDir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return InvalidArgumentError(dir.string() + ": not a run directory (" +
                                (fs::exists(dir, ec) ? "not a folder" : "no such folder") + ")");
  }
  const fs::path report = dir / "report.json";
  std::vector<RunDirScenario> scenarios;
  // A report.json that is there but cannot be followed (a symlink loop, a dangling link) is an
  // error naming it, never a directory read as if it had none.
  if (fs::exists(fs::symlink_status(report, ec))) {
    std::error_code follow;
    const fs::file_status target = fs::status(report, follow);
    if (follow || !fs::is_regular_file(target)) {
      return InvalidArgumentError(report.string() + ": cannot be read (" +
                                  (follow ? follow.message() : std::string("not a regular file")) + ")");
    }
  }
  if (fs::exists(report, ec)) {
    LOCKSTEP_ASSIGN_OR_RETURN(scenarios, FromReport(dir, report));
  } else {
    LOCKSTEP_ASSIGN_OR_RETURN(scenarios, FromTraces(dir));
    if (scenarios.empty()) {
      return InvalidArgumentError(dir.string() + ": not a run directory (no report.json, and no " +
                                  "<scenario>/traces/rank-0.trace under it)");
    }
  }
  return scenarios;
}

int RunDiff::Count(ScenarioDiff::Verdict verdict) const {
  return static_cast<int>(std::count_if(scenarios.begin(), scenarios.end(),
                                        [verdict](const ScenarioDiff& d) { return d.verdict() == verdict; }));
}

bool RunDiff::Identical() const {
  return Count(ScenarioDiff::Verdict::kDifferent) == 0 && Count(ScenarioDiff::Verdict::kIdentical) > 0;
}

Result<RunDiff> DiffRunDirs(const fs::path& a, const fs::path& b, const RunDiffOptions& options) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<RunDirScenario> index_a, IndexRunDir(a));
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<RunDirScenario> index_b, IndexRunDir(b));
  if (options.scenario) {
    for (const auto& [dir, index] : {std::pair{&a, &index_a}, std::pair{&b, &index_b}}) {
      auto keep = std::remove_if(index->begin(), index->end(),
                                 [&](const RunDirScenario& s) { return s.id != *options.scenario; });
      if (keep == index->begin()) {
        return InvalidArgumentError("scenario " + *options.scenario + " is not in " + dir->string() +
                                    " (it has: " + Ids(*index) + ")");
      }
      index->erase(keep, index->end());
    }
  }

  RunDiff diff;
  diff.a = a;
  diff.b = b;
  std::map<std::string, const RunDirScenario*> by_id_b;
  for (const RunDirScenario& s : index_b) by_id_b.emplace(s.id, &s);
  std::map<std::string, bool> in_a;
  for (const RunDirScenario& sa : index_a) {
    in_a[sa.id] = true;
    auto it = by_id_b.find(sa.id);
    if (it == by_id_b.end()) {
      diff.only_in_a.push_back(sa.id);
      continue;
    }
    const RunDirScenario& sb = *it->second;
    const bool traces_a = sa.ranks > 0 && HasAnyTrace(sa.trace_dir, sa.ranks);
    const bool traces_b = sb.ranks > 0 && HasAnyTrace(sb.trace_dir, sb.ranks);
    if (!traces_a || !traces_b) {
      diff.scenarios.push_back(WithoutTraces(sa, sb, traces_a, traces_b));
      continue;
    }
    Result<std::vector<RankTrace>> ta = ReadTraceDir(sa.trace_dir, sa.ranks);
    // The reader names the file (rank-1.trace:7); the folder says which run and scenario.
    if (!ta.ok()) return InvalidArgumentError(ta.status().message()).WithContext(sa.trace_dir.string());
    Result<std::vector<RankTrace>> tb = ReadTraceDir(sb.trace_dir, sb.ranks);
    if (!tb.ok()) return InvalidArgumentError(tb.status().message()).WithContext(sb.trace_dir.string());
    diff.scenarios.push_back(DiffTraces(sa.id, *ta, *tb));
  }
  for (const RunDirScenario& sb : index_b) {
    if (in_a.count(sb.id) == 0) diff.only_in_b.push_back(sb.id);
  }
  if (diff.scenarios.empty()) {
    return InvalidArgumentError("no scenario is in both runs: " + a.string() + " has " + Ids(index_a) + "; " +
                                b.string() + " has " + Ids(index_b));
  }
  return diff;
}

}  // namespace lockstep
