#include "checkers/streamed_traces.h"

#include <algorithm>
#include <utility>

#include "checkers/checker_registry.h"
#include "harness/result/scenario_series.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

// The report's series, fed as one more judge.
class SeriesJudge : public StepJudge {
 public:
  explicit SeriesJudge(std::vector<int> ranks) : builder(std::move(ranks)) {}
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override { builder.OnStep(step, records); }
  std::vector<Finding> Finish(const CheckContext&) override { return {}; }
  SeriesBuilder builder;
};

}  // namespace

Result<StreamedTraces> ReadTracesWhole(const std::filesystem::path& dir, int world_size, std::string why) {
  StreamedTraces out;
  LOCKSTEP_ASSIGN_OR_RETURN(out.traces, ReadTraceDir(dir, world_size));
  out.whole = true;
  out.why_whole = std::move(why);
  out.series = BuildSeries(out.traces);
  return out;
}

std::map<std::string, StepJudge*> StreamedTraces::judges_by_name() const {
  std::map<std::string, StepJudge*> out;
  for (const auto& [name, judge] : judges) out[name] = judge.get();
  return out;
}

Result<DriveStats> DriveSteps(const std::vector<RankTraceStream*>& streams, const std::vector<StepJudge*>& judges) {
  const size_t n = streams.size();
  std::vector<std::optional<StepRecord>> next(n), current(n);
  DriveStats stats;
  // Reads rank r's next step; `after`: the step it must not go below.
  auto advance = [&](size_t r, std::optional<int64_t> after) -> Status {
    LOCKSTEP_ASSIGN_OR_RETURN(next[r], streams[r]->NextStep());
    if (next[r] && after && next[r]->step < *after && !stats.out_of_order) {
      stats.out_of_order = TraceFileName(static_cast<int>(r)) + ": step " + std::to_string(next[r]->step) +
                           " after step " + std::to_string(*after);
    }
    return Status::Ok();
  };
  for (size_t r = 0; r < n; ++r) LOCKSTEP_RETURN_IF_ERROR(advance(r, std::nullopt));

  std::vector<const StepRecord*> records(n);
  while (!stats.out_of_order) {
    std::optional<int64_t> step;
    for (const auto& record : next) {
      if (record && (!step || record->step < *step)) step = record->step;
    }
    if (!step) break;
    size_t held = 0;
    for (size_t r = 0; r < n; ++r) {
      records[r] = nullptr;
      if (!next[r] || next[r]->step != *step) continue;
      // A step recorded twice in a row: the last record stands, as in StepsByNumber.
      while (next[r] && next[r]->step == *step) {
        current[r] = std::move(next[r]);
        LOCKSTEP_RETURN_IF_ERROR(advance(r, *step));
      }
      records[r] = &*current[r];
    }
    for (size_t r = 0; r < n; ++r) held += (current[r] ? 1 : 0) + (next[r] ? 1 : 0);
    stats.most_records_held = std::max(stats.most_records_held, held);
    if (stats.out_of_order) break;
    for (StepJudge* judge : judges) judge->OnStep(*step, records);
    ++stats.steps;
    for (auto& record : current) record.reset();
  }
  return stats;
}

Result<StreamedTraces> ReadTracesFor(const std::vector<std::string>& checkers, const std::filesystem::path& dir,
                                     int world_size, const JudgeStart& start) {
  if (world_size < 1) return InvalidArgumentError("ReadTracesFor: world size " + std::to_string(world_size) + " < 1");
  StreamedTraces out;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(checkers)) {
    std::unique_ptr<StepJudge> judge = checker->StartJudge(start);
    if (judge) {
      out.judges[std::string(checker->name())] = std::move(judge);
    } else if (checker->reads_tensors()) {
      return ReadTracesWhole(dir, world_size, std::string(checker->name()) + " reads tensors across steps");
    }
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RankTraceStream>> streams, OpenTraceDir(dir, world_size));
  std::vector<RankTraceStream*> raw;
  std::vector<int> ranks;  // OpenTraceDir checked that each file's header names its rank
  for (const auto& s : streams) {
    ranks.push_back(static_cast<int>(raw.size()));
    raw.push_back(s.get());
  }
  SeriesJudge series(ranks);
  std::vector<StepJudge*> judges;
  for (const auto& [name, judge] : out.judges) judges.push_back(judge.get());
  judges.push_back(&series);
  LOCKSTEP_ASSIGN_OR_RETURN(DriveStats stats, DriveSteps(raw, judges));
  if (stats.out_of_order) return ReadTracesWhole(dir, world_size, "steps out of order (" + *stats.out_of_order + ")");
  out.most_records_held = stats.most_records_held;
  for (const auto& s : streams) out.traces.push_back(s->TakeTrace());
  out.series = series.builder.Finish(out.traces);
  return out;
}

}  // namespace lockstep
