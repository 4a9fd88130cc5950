#include "reports/report_text.h"

#include <map>

#include <cmath>
#include <cstdio>

#include "harness/trace/trace_record.h"

namespace lockstep {

std::string RanksText(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
  }
  return out + "]";
}

std::string FindingRanksText(const Finding& finding) {
  std::string out = RanksText(finding.ranks);
  const auto majority = finding.details.find("majority");
  if (majority != finding.details.end() && majority->second == "none") {
    const auto named = finding.details.find("named");
    out += " (no majority: " + (named == finding.details.end() ? std::string("every side named") : named->second) + ")";
  }
  return out;
}

std::string FindingHeadline(const Finding& finding) {
  std::string out = finding.checker;
  if (finding.step) out += " step " + std::to_string(*finding.step);
  if (!finding.tensor.empty()) out += " tensor " + finding.tensor;
  if (!finding.ranks.empty()) out += " ranks " + FindingRanksText(finding);
  // A program that starts its own ranks is judged one spawning at a time (harness/runner/judge.cc).
  if (auto k = finding.details.find("spawning"); k != finding.details.end()) {
    auto fn = finding.details.find("spawned_function");
    out += " in spawning " + k->second + (fn == finding.details.end() ? "" : " (" + fn->second + ")");
  }
  return out;
}

std::string JudgedText(const CheckerVerdict& verdict) {
  if (!verdict.judged) return "";
  const CheckerCoverage& c = *verdict.judged;
  if (c.tensors == 0) return "no " + c.kind + " tensor held by two ranks that must agree";
  return std::to_string(c.tensors) + " " + c.kind + (c.tensors == 1 ? " tensor" : " tensors") + " in " +
         std::to_string(c.steps) + (c.steps == 1 ? " step, " : " steps, ") + std::to_string(c.groups) +
         (c.groups == 1 ? " group" : " groups");
}

std::string JudgedSummary(const ScenarioResult& scenario) {
  std::string out;
  for (const CheckerVerdict& v : scenario.checkers) {
    const std::string text = JudgedText(v);
    if (!text.empty()) out += (out.empty() ? "" : "; ") + v.checker + ": " + text;
  }
  return out;
}

std::string NothingComparedNote(const ScenarioResult& scenario) {
  if (IsFailure(scenario.outcome)) return "";
  std::string silent;
  bool any_param = false;
  for (const CheckerVerdict& v : scenario.checkers) {
    if (!v.judged || v.judged->kind != ToString(TensorKind::kParam)) continue;
    any_param = true;
    if (v.judged->tensors != 0) return "";
    silent += (silent.empty() ? "" : ", ") + v.checker;
  }
  if (!any_param) return "";
  return "no parameter had a replica to compare (" + silent + " compared nothing)";
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

std::string HostsPhrase(const ScenarioResult& scenario) {
  std::map<std::string, std::vector<int>> by_host;
  for (const auto& [rank, host] : scenario.rank_hosts) by_host[host].push_back(rank);
  if (by_host.size() < 2) return "";
  std::string out = " on " + std::to_string(by_host.size()) + " hosts (";
  bool first = true;
  for (const auto& [host, ranks] : by_host) {
    std::string list;
    for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
    out += std::string(first ? "" : "; ") + host + ": " + (ranks.size() == 1 ? "rank " : "ranks ") + list;
    first = false;
  }
  return out + ")";
}

}  // namespace lockstep
