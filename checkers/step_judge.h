// A step judge: the part of a checker that reads tensors, fed one step at a time across ranks.
// A run's traces are too large to hold whole (64 ranks x 1000 steps x 300 tensors), so a checker
// that reads StepRecord::tensors judges them as they stream past and keeps only what its finding
// needs; the same judge, driven over traces in memory, is its Check() (JudgeInMemory), so there is
// one implementation of every such checker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/result/finding.h"
#include "harness/result/run_result.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

struct CheckContext;  // checkers/checker.h, which includes this

// What a judge is started with, before the run's traces stream: what it compares steps with.
// The companion runs are 1-rank, so they are read whole and outlive the judge; the runner
// launches them before it streams the main run's traces for that reason. Null: that run was not
// made (the judge says so in Finish, as its Check() would).
struct JudgeStart {
  Tolerances tolerances{};
  // golden's file is keyed by these (CheckContext::fixtures_dir, platform, the scenario's name).
  std::string scenario_name{};
  std::filesystem::path fixtures_dir{};
  std::string platform{};
  const std::vector<RankTrace>* reference = nullptr;        // CheckContext::reference
  const std::vector<RankTrace>* reference_split = nullptr;  // CheckContext::reference_split
};

class StepJudge {
 public:
  virtual ~StepJudge() = default;
  // One step across ranks, steps in increasing order, each once. records[r]: rank r's record of
  // `step` (its last one, if it recorded the step twice) with its tensors; null where rank r has
  // none (it died before, or has no trace). The records live only for this call.
  virtual void OnStep(int64_t step, const std::vector<const StepRecord*>& records) = 0;
  // After the last step. `context` holds the folded traces (headers, footers, collectives, steps
  // whose tensors may already be gone): a judge reads tensors only in OnStep.
  virtual std::vector<Finding> Finish(const CheckContext& context) = 0;
  // What it compared over the steps fed (CheckerCoverage), for the verdict; nullopt where the
  // judge does not count (it compares no replicas).
  virtual std::optional<CheckerCoverage> Coverage() const { return std::nullopt; }
};

// Drives `judge` over the traces in `context` (every step any rank with data recorded, in order)
// and returns its findings: what a step-judging checker's Check() is. Traces whose steps were
// streamed without their tensors (context.steps_without_tensors) are a harness error, returned as
// an error finding of `checker`, never judged as if they were empty.
std::vector<Finding> JudgeInMemory(StepJudge& judge, std::string_view checker, const CheckContext& context);

// What a judge driven in memory starts with: the same fields of `context`.
JudgeStart JudgeStartFor(const CheckContext& context);

}  // namespace lockstep
