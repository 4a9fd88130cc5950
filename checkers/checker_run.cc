#include "checkers/checker_run.h"

#include <chrono>

#include "checkers/checker_registry.h"

namespace lockstep {

CheckerRun RunCheckers(const std::vector<std::string>& names, const CheckContext& context,
                       const std::vector<ExpectedFinding>& expected, const CheckerRunOptions& options) {
  CheckerRun run;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(names)) {
    const auto start = std::chrono::steady_clock::now();
    CheckerVerdict verdict;
    verdict.checker = std::string(checker->name());
    if (auto skip = options.skip.find(verdict.checker); skip != options.skip.end()) {
      verdict.outcome = Outcome::kSkipped;
      verdict.skip_reason = skip->second;
      run.verdicts.push_back(verdict);
      continue;
    }
    std::vector<Finding> found;
    if (auto instead = options.findings_instead.find(verdict.checker); instead != options.findings_instead.end()) {
      found = instead->second;
    } else if (auto judge = options.judges.find(verdict.checker); judge != options.judges.end()) {
      found = judge->second->Finish(context);
      verdict.judged = judge->second->Coverage();
    } else if (context.steps_without_tensors && checker->reads_tensors()) {
      Finding f;
      f.checker = verdict.checker;
      f.outcome = FindingOutcome::kError;
      f.message = "harness error: " + verdict.checker +
                  " reads tensors, but the run's traces were streamed without them and it had no step judge fed";
      found.push_back(std::move(f));
    } else {
      found = checker->Check(context);
    }
    verdict.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.findings.insert(run.findings.end(), found.begin(), found.end());
    run.verdicts.push_back(verdict);
  }
  run.expectation = MatchExpectations(expected, run.findings);
  for (CheckerVerdict& verdict : run.verdicts) {
    if (verdict.outcome != Outcome::kSkipped) verdict.outcome = CheckerOutcome(verdict.checker, run.findings);
  }
  return run;
}

std::string WhyNotWithoutScenario(const Checker& checker, bool have_launch) {
  if (!checker.needs_scenario().empty()) return "needs " + std::string(checker.needs_scenario()) + "; there is no scenario";
  if (checker.needs_launch() && !have_launch) {
    return "needs how the launcher saw the ranks end (exit codes, the hang watchdog); the traces alone do not say";
  }
  return "";
}

}  // namespace lockstep
