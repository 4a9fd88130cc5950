#include "reports/report_text.h"

#include <cmath>
#include <cstdio>

namespace lockstep {

std::string RanksText(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
  }
  return out + "]";
}

std::string FindingHeadline(const Finding& finding) {
  std::string out = finding.checker;
  if (finding.step) out += " step " + std::to_string(*finding.step);
  if (!finding.tensor.empty()) out += " tensor " + finding.tensor;
  if (!finding.ranks.empty()) out += " ranks " + RanksText(finding.ranks);
  return out;
}

std::string CauseLine(const Finding& finding) {
  return finding.cause.empty() ? std::string() : "cause: " + finding.cause;
}

const Finding* KeyFinding(const ScenarioResult& scenario) {
  const bool failing = IsFailure(scenario.outcome);
  for (const Finding& f : scenario.findings) {
    if (failing && f.outcome != FindingOutcome::kExpected) return &f;
    if (!failing && f.outcome == FindingOutcome::kExpected) return &f;
  }
  return nullptr;
}

const char* OutcomeWord(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "FAIL";
    case Outcome::kXfail: return "xfail";
    case Outcome::kXpass: return "XPASS";
    case Outcome::kError: return "ERROR";
    case Outcome::kTimeout: return "TIMEOUT";
    case Outcome::kSkipped: return "skipped";
  }
  return "UNKNOWN";
}

int FailureCount(const OutcomeCounts& counts) {
  return counts.failed + counts.xpassed + counts.errors + counts.timeouts;
}

std::string SummaryLine(const OutcomeCounts& counts) {
  // A harness error is not a failure of the system under test: "0 passed, 1 failed" for a run
  // that only broke would blame the wrong party.
  std::string out = std::to_string(counts.passed) + " passed, " + std::to_string(FailureCount(counts) - counts.errors) +
                    " failed";
  if (counts.errors > 0) out += ", " + std::to_string(counts.errors) + (counts.errors == 1 ? " error" : " errors");
  if (counts.xfailed > 0) out += ", " + std::to_string(counts.xfailed) + " xfail";
  if (counts.skipped > 0) out += ", " + std::to_string(counts.skipped) + " skipped";
  return out;
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f s", seconds);
  return buf;
}

}  // namespace lockstep
