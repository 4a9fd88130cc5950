// Runs a scenario's checkers on one context and turns their findings into verdicts: the
// scenario's (the expectation matcher) and each checker's (a JUnit testcase). `lockstep run`,
// `lockstep check` and `lockstep exec` all judge through here, so they agree on what a finding
// means.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "checkers/checker.h"
#include "checkers/expectation_matcher.h"
#include "harness/result/run_result.h"

namespace lockstep {

struct CheckerRunOptions {
  // Checker -> why it is not run here (no scenario, no launch, no companion run): a skipped verdict.
  std::map<std::string, std::string> skip;
  // Checker -> findings that stand for its run: a companion run it needs did not complete.
  std::map<std::string, std::vector<Finding>> findings_instead;
  // Checker -> its judge, already fed every step of the run (ReadTracesFor): its findings are the
  // judge's Finish, not Check() on the context's traces, whose steps have no tensors.
  std::map<std::string, StepJudge*> judges;
};

struct CheckerRun {
  std::vector<Finding> findings;         // in checker order, outcomes set by the matcher
  std::vector<CheckerVerdict> verdicts;  // one per name, in order
  ExpectationVerdict expectation;
};

// The checkers come from MakeCheckers (an unknown name is an error finding of its own). A
// checker that reads tensors, has no judge in options.judges and is handed traces streamed
// without tensors (context.steps_without_tensors) gets an error finding: the harness broke, and
// no checker judges empty steps as if they were clean.
CheckerRun RunCheckers(const std::vector<std::string>& names, const CheckContext& context,
                       const std::vector<ExpectedFinding>& expected, const CheckerRunOptions& options = {});

// Why `checker` cannot judge without a scenario file (and, when `have_launch` is false, without a
// launch report), or empty when the traces are enough. From the checker itself.
std::string WhyNotWithoutScenario(const Checker& checker, bool have_launch);

}  // namespace lockstep
