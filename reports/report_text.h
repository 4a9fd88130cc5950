// Phrases every reporter shares, so a finding reads the same in the console, JUnit, Markdown,
// annotations and HTML: "replica_weights step 3 tensor fc.weight ranks [1]".
#pragma once

#include <string>
#include <vector>

#include "harness/result/run_result.h"

namespace lockstep {

// "[1, 3]"
std::string RanksText(const std::vector<int>& ranks);

// "<checker> step S tensor T ranks [..]", leaving out what the finding does not have.
std::string FindingHeadline(const Finding& finding);

// "cause: <what probably went wrong>" (Finding::cause), or "" when the finding has none: the
// line every format shows beside the message, without expanding anything.
std::string CauseLine(const Finding& finding);

// The finding that explains a scenario's outcome: for a failing scenario the first finding
// that is a failure or a checker error, for an xfail the first expected one; nullptr if none.
const Finding* KeyFinding(const ScenarioResult& scenario);

// A word for people: failures in capitals ("FAIL", "XPASS", "ERROR", "TIMEOUT"), the rest in
// lower case ("pass", "xfail", "skipped"). No emoji: logs and screen readers get the same text.
const char* OutcomeWord(Outcome outcome);

// Every outcome that makes the run fail: fail + xpass + error + timeout.
int FailureCount(const OutcomeCounts& counts);

// "3 passed, 2 failed, 1 error, 1 xfail, 1 skipped": the first two always, the others when
// non-zero; failed counts fail, xpass and timeout, errors the harness errors.
// "failed" counts every failing outcome (fail, xpass, error, timeout).
std::string SummaryLine(const OutcomeCounts& counts);

// "1.23 s"; negative and non-finite durations print as "-".
std::string FormatSeconds(double seconds);

}  // namespace lockstep
