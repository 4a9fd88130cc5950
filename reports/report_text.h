// Phrases every reporter shares, so a finding reads the same in the console, JUnit, Markdown,
// annotations and HTML: "replica_weights step 3 tensor fc.weight ranks [1]".
#pragma once

#include <string>
#include <vector>

#include "harness/result/run_result.h"

namespace lockstep {

// "[1, 3]"
std::string RanksText(const std::vector<int>& ranks);

// A finding's ranks, "[1, 3]", and when no majority decided which side is wrong (its detail
// `majority: none`), "[0, 1] (no majority: every side named)": the ranks then are every rank that
// disagrees, and no format may let them read as the culprits. Where the records still told one
// side (its detail `named`), that reason instead.
std::string FindingRanksText(const Finding& finding);

// "<checker> step S tensor T ranks [..]", leaving out what the finding does not have.
std::string FindingHeadline(const Finding& finding);

// What a checker compared: "4 param tensors in 6 steps, 1 group" (nothing: "no param tensor held by
// two ranks that must agree"); "" when the verdict does not say.
std::string JudgedText(const CheckerVerdict& verdict);

// "replica_weights: 4 param tensors in 6 steps, 1 group; synced_grads: ..." over the verdicts
// that say what they compared; "" when none does.
std::string JudgedSummary(const ScenarioResult& scenario);
// " on 2 hosts (node0: ranks 0,1; node1: ranks 2,3)" for a scenario whose ranks ran on several
// hosts (their traces say where); "" on one.
std::string HostsPhrase(const ScenarioResult& scenario);

// For a scenario that passed although no parameter had a replica to compare (a fully sharded
// program): "no parameter had a replica to compare (replica_weights compared nothing)"; else "".
std::string NothingComparedNote(const ScenarioResult& scenario);

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
