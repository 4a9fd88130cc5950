#include "checkers/step_judge.h"

#include <string>

#include "checkers/checker.h"
#include "checkers/internal/check_util.h"

namespace lockstep {

std::vector<Finding> JudgeInMemory(StepJudge& judge, std::string_view checker, const CheckContext& context) {
  if (context.steps_without_tensors) {
    Finding f;
    f.checker = std::string(checker);
    f.outcome = FindingOutcome::kError;
    f.message = "harness error: " + std::string(checker) +
                " was handed traces whose steps were streamed without their tensors; it judges tensors step by step "
                "(StepJudge) and must be fed while the traces stream";
    return {f};
  }
  std::vector<const RankTrace*> ranks;
  for (const RankTrace& t : context.traces) ranks.push_back(internal::HasData(t) ? &t : nullptr);
  ForEachStepAcrossRanks(ranks, [&judge](int64_t step, const std::vector<const StepRecord*>& records) {
    judge.OnStep(step, records);
  });
  return judge.Finish(context);
}

JudgeStart JudgeStartFor(const CheckContext& context) {
  JudgeStart start;
  start.tolerances = context.scenario.tolerances;
  start.scenario_name = context.scenario.name;
  start.fixtures_dir = context.fixtures_dir;
  start.platform = context.platform;
  start.reference = context.reference;
  start.reference_split = context.reference_split;
  return start;
}

}  // namespace lockstep
