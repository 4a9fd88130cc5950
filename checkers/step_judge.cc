#include "checkers/step_judge.h"

#include <map>
#include <set>
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
  std::vector<std::map<int64_t, const StepRecord*>> by_rank;
  std::set<int64_t> steps;
  for (const RankTrace& t : context.traces) {
    by_rank.push_back(internal::HasData(t) ? internal::StepsByNumber(t) : std::map<int64_t, const StepRecord*>{});
    for (const auto& [step, record] : by_rank.back()) steps.insert(step);
  }
  std::vector<const StepRecord*> records(by_rank.size());
  for (int64_t step : steps) {
    for (size_t r = 0; r < by_rank.size(); ++r) {
      auto it = by_rank[r].find(step);
      records[r] = it == by_rank[r].end() ? nullptr : it->second;
    }
    judge.OnStep(step, records);
  }
  return judge.Finish(context);
}

}  // namespace lockstep
