// A run's own traces read once, step by step, for the checkers that judge them: every step goes,
// across ranks, to each checker's judge (checkers/step_judge.h) and to the report's series, and
// what stays in memory is the folded traces, whose steps hold no tensors. So memory grows with
// ranks x tensors (one step record per rank, and one read ahead) and with steps only by a step's
// scalars (number, loss, norms), never by steps x tensors. `lockstep run`, `check` and `exec`
// read their run's traces here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkers/checker.h"
#include "harness/core/status.h"
#include "harness/result/run_result.h"
#include "harness/trace/trace_record.h"
#include "harness/trace/trace_stream.h"

namespace lockstep {

struct StreamedTraces {
  std::vector<RankTrace> traces;  // index = rank; folded: steps without tensors, unless `whole`
  // Read whole instead (ReadTraceDir): a checker asked for reads tensors without a judge
  // (determinism), or a rank's step numbers went backwards, which a merge by
  // step number cannot stream. Then `judges` is empty and every checker runs its Check().
  bool whole = false;
  std::string why_whole;
  std::map<std::string, std::unique_ptr<StepJudge>> judges;  // checker name -> its judge, fed every step
  ScenarioSeries series;          // BuildSeries of the same traces, tensors included
  size_t most_records_held = 0;   // step records held at once across ranks, at most 2 per rank

  // For CheckerRunOptions::judges.
  std::map<std::string, StepJudge*> judges_by_name() const;
};

// Reads <dir>/rank-<r>.trace for r in [0, world_size) (ReadTraceDir's checks and errors; a
// missing file is a rank marked `missing`) for the checkers named in `checkers`, whose judges are
// started with `start` (the companion runs `reference` compares each step with).
Result<StreamedTraces> ReadTracesFor(const std::vector<std::string>& checkers, const std::filesystem::path& dir,
                                     int world_size, const JudgeStart& start = {});

// The same, read whole (ReadTraceDir) with `why` as why_whole: a companion run, which a checker
// compares with the run's traces whole.
Result<StreamedTraces> ReadTracesWhole(const std::filesystem::path& dir, int world_size, std::string why);

struct DriveStats {
  int64_t steps = 0;              // steps handed to the judges
  size_t most_records_held = 0;
  // Set when a rank's steps went backwards ("rank-1.trace: step 3 after step 5"): the drive
  // stopped there, and what the judges saw is incomplete.
  std::optional<std::string> out_of_order;
};

// The merge by step number: while any stream has steps, the smallest next step number goes to
// every judge with each rank's record of it (a rank whose file ended, or that skipped the step,
// is null; a step recorded twice in a row hands its last record, as StepsByNumber keeps it).
// Holds each rank's current record and the one read after it, never more.
Result<DriveStats> DriveSteps(const std::vector<RankTraceStream*>& streams, const std::vector<StepJudge*>& judges);

}  // namespace lockstep
