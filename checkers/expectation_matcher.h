// Turns the findings of all checkers and the scenario's `expect:` list into the scenario outcome,
// with lit's semantics (an expected failure that happens is XFAIL, fine; one that does not is
// XPASS, a failure). Findings that match an expectation are marked FindingOutcome::kExpected.
#pragma once

#include <string>
#include <vector>

#include "harness/result/finding.h"
#include "harness/result/run_result.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

struct ExpectationVerdict {
  Outcome outcome = Outcome::kPass;
  std::string reason;  // empty for kPass; otherwise says which expectations and findings decided
};

// A finding matches an expectation when the checker is equal, and, where the expectation gives
// them, the step is equal, the ranks are equal as sets, and the tensor glob (fnmatch) matches
// finding.tensor or one of finding.tensors. Only kFail findings can become kExpected.
bool Matches(const ExpectedFinding& expected, const Finding& finding);

// Without expectations: kFail if any finding failed, else kError if a checker could not judge,
// else kPass. With expectations:
//   - kXfail  every expectation matched by at least one finding, and every finding expected;
//   - kXpass  no expected finding appeared and nothing else failed (the injected bug went unseen);
//   - kFail   some expectations matched but others did not, or an unexpected finding appeared;
//   - kError  all as for kXfail, but a checker could not judge (a kError finding).
ExpectationVerdict MatchExpectations(const std::vector<ExpectedFinding>& expected, std::vector<Finding>& findings);

// One checker's verdict (a JUnit testcase) from the findings after MatchExpectations: kError if it
// could not judge, else kFail if one of its findings was not expected, else kXfail if it had
// findings (all expected), else kPass.
Outcome CheckerOutcome(const std::string& checker, const std::vector<Finding>& findings);

}  // namespace lockstep
