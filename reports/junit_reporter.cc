#include "reports/junit_reporter.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "reports/report_text.h"
#include "reports/text_escape.h"

namespace lockstep {
namespace {

// A rank's log excerpt in <system-out>; the report.json keeps what the launcher kept.
constexpr size_t kMaxLogBytesPerRank = 16 * 1024;

// The name of the testcase that carries a scenario-level outcome no checker verdict explains
// (a launch error, a skip before running, an expected finding that never appeared).
constexpr const char* kScenarioCase = "scenario";

// JUnit times are plain decimals (the Jenkins schema's SUREFIRE_TIME pattern has no sign,
// exponent or "nan").
std::string JunitTime(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds);
  return buf;
}

struct Case {
  std::string name;
  Outcome outcome = Outcome::kPass;
  double time_s = 0;
  std::string skip_reason;
  std::vector<const Finding*> findings;
  std::string message;  // for cases without findings (scenario-level)
};

bool HasFindingOutcome(const Case& c, FindingOutcome outcome) {
  for (const Finding* f : c.findings) {
    if (f->outcome == outcome) return true;
  }
  return false;
}

// One case per checker verdict, plus one per checker that reported findings without a verdict,
// plus the scenario-level case when the scenario's outcome would otherwise not show.
std::vector<Case> BuildCases(const ScenarioResult& s) {
  std::vector<Case> cases;
  for (const CheckerVerdict& v : s.checkers) {
    Case c;
    c.name = v.checker;
    c.outcome = v.outcome;
    c.time_s = v.duration_s;
    c.skip_reason = v.skip_reason;
    cases.push_back(std::move(c));
  }
  for (const Finding& f : s.findings) {
    Case* target = nullptr;
    for (Case& c : cases) {
      if (c.name == f.checker) target = &c;
    }
    if (target == nullptr) {
      Case c;
      c.name = f.checker;
      c.outcome = Outcome::kXfail;  // refined below from its findings
      cases.push_back(std::move(c));
      target = &cases.back();
    }
    target->findings.push_back(&f);
  }
  for (Case& c : cases) {
    // A finding that is not expected is never hidden behind a passing verdict.
    if (HasFindingOutcome(c, FindingOutcome::kError) && !IsFailure(c.outcome)) {
      c.outcome = Outcome::kError;
    } else if (HasFindingOutcome(c, FindingOutcome::kFail) && !IsFailure(c.outcome)) {
      c.outcome = Outcome::kFail;
    }
  }
  bool any_failing = false;
  for (const Case& c : cases) any_failing = any_failing || IsFailure(c.outcome);
  const bool scenario_unexplained = IsFailure(s.outcome) && !any_failing;
  if (cases.empty() || scenario_unexplained) {
    Case c;
    c.name = kScenarioCase;
    c.outcome = s.outcome;
    c.time_s = s.duration_s;
    c.skip_reason = s.reason;
    c.message = s.reason;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string FailureMessage(const Case& c, const ScenarioResult& s) {
  for (const Finding* f : c.findings) {
    if (f->outcome == FindingOutcome::kExpected) continue;
    std::string msg = FindingHeadline(*f);
    if (!f->message.empty()) msg += ": " + f->message;
    if (!f->cause.empty()) msg += "; " + CauseLine(*f);
    size_t others = 0;
    for (const Finding* g : c.findings) others += (g != f && g->outcome != FindingOutcome::kExpected) ? 1 : 0;
    if (others > 0) msg += " (+" + std::to_string(others) + " more)";
    return msg;
  }
  if (!c.message.empty()) return c.message;
  if (!s.reason.empty()) return s.reason;
  return std::string("scenario ") + ToString(s.outcome);
}

std::string FindingDetails(const Finding& f) {
  std::string out = "[" + std::string(ToString(f.outcome)) + "] " + FindingHeadline(f);
  if (!f.message.empty()) out += ": " + f.message;
  out += "\n";
  if (!f.cause.empty()) out += "  " + CauseLine(f) + "\n";
  if (!f.tensors.empty()) {
    out += "  tensors:";
    for (size_t i = 0; i < f.tensors.size(); ++i) out += (i ? ", " : " ") + f.tensors[i];
    out += "\n";
  }
  for (const auto& [key, value] : f.details) out += "  " + key + ": " + value + "\n";
  return out;
}

std::string CaseDetails(const Case& c, const ScenarioResult& s, bool expected_only) {
  std::string out = "scenario " + s.id + " (" + s.file + ":" + std::to_string(s.line) + ")\n";
  if (!s.reason.empty()) out += "reason: " + s.reason + "\n";
  for (const Finding* f : c.findings) {
    if ((f->outcome == FindingOutcome::kExpected) == expected_only) out += FindingDetails(*f);
  }
  return out;
}

std::string RankLogs(const ScenarioResult& s) {
  std::string out;
  for (const auto& [rank, log] : s.rank_logs) {
    out += "--- rank " + std::to_string(rank) + " ---\n";
    out += TailUtf8(log, kMaxLogBytesPerRank);
    if (!log.empty() && log.back() != '\n') out += "\n";
  }
  return out;
}

void Property(std::ostream& out, const char* name, const std::string& value) {
  if (value.empty()) return;
  out << "      <property name=\"" << name << "\" value=\"" << XmlEscapeAttribute(value) << "\"/>\n";
}

void RenderCase(std::ostream& out, const Case& c, const ScenarioResult& s, const std::string& logs) {
  const bool failing = IsFailure(c.outcome);
  std::ostringstream body;
  switch (c.outcome) {
    case Outcome::kFail:
    case Outcome::kXpass: {
      const std::string type = c.outcome == Outcome::kXpass ? "xpass" : c.name;
      body << "      <failure message=\"" << XmlEscapeAttribute(FailureMessage(c, s)) << "\" type=\""
           << XmlEscapeAttribute(type) << "\">" << XmlCData(CaseDetails(c, s, false)) << "</failure>\n";
      break;
    }
    case Outcome::kError:
    case Outcome::kTimeout: {
      const char* type = c.outcome == Outcome::kTimeout ? "timeout" : "error";
      body << "      <error message=\"" << XmlEscapeAttribute(FailureMessage(c, s)) << "\" type=\"" << type
           << "\">" << XmlCData(CaseDetails(c, s, false)) << "</error>\n";
      break;
    }
    case Outcome::kSkipped:
      body << "      <skipped message=\"" << XmlEscapeAttribute(c.skip_reason) << "\"/>\n";
      break;
    case Outcome::kXfail:
      // JUnit has no expected failure: a passed case whose output says what was caught.
      body << "      <system-out>"
           << XmlCData("xfail: expected failure, the injected bug was caught as expected\n" +
                       CaseDetails(c, s, true))
           << "</system-out>\n";
      break;
    case Outcome::kPass:
      break;
  }
  if (failing && !logs.empty()) body << "      <system-out>" << XmlCData(logs) << "</system-out>\n";

  out << "    <testcase name=\"" << XmlEscapeAttribute(c.name) << "\" classname=\""
      << XmlEscapeAttribute("lockstep." + s.id) << "\" time=\"" << JunitTime(c.time_s) << "\"";
  if (failing) {
    // EnricoMi/publish-unit-test-result-action turns these into annotations on the scenario file.
    out << " file=\"" << XmlEscapeAttribute(s.file) << "\" line=\"" << s.line << "\"";
  }
  const std::string children = body.str();
  if (children.empty()) {
    out << "/>\n";
  } else {
    out << ">\n" << children << "    </testcase>\n";
  }
}

}  // namespace

Status JunitReporter::Render(const RunResult& result, std::ostream& out) const {
  struct Suite {
    const ScenarioResult* scenario;
    std::vector<Case> cases;
    int failures = 0, errors = 0, skipped = 0;
  };
  std::vector<Suite> suites;
  int total_tests = 0, total_failures = 0, total_errors = 0;
  for (const ScenarioResult& s : result.scenarios) {
    Suite suite{&s, BuildCases(s)};
    for (const Case& c : suite.cases) {
      if (c.outcome == Outcome::kFail || c.outcome == Outcome::kXpass) ++suite.failures;
      if (c.outcome == Outcome::kError || c.outcome == Outcome::kTimeout) ++suite.errors;
      if (c.outcome == Outcome::kSkipped) ++suite.skipped;
    }
    total_tests += static_cast<int>(suite.cases.size());
    total_failures += suite.failures;
    total_errors += suite.errors;
    suites.push_back(std::move(suite));
  }

  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"lockstep\" tests=\"" << total_tests << "\" failures=\"" << total_failures
      << "\" errors=\"" << total_errors << "\" time=\"" << JunitTime(result.context.duration_s) << "\">\n";
  for (const Suite& suite : suites) {
    const ScenarioResult& s = *suite.scenario;
    out << "  <testsuite name=\"" << XmlEscapeAttribute(s.id) << "\" tests=\"" << suite.cases.size()
        << "\" failures=\"" << suite.failures << "\" errors=\"" << suite.errors << "\" skipped=\""
        << suite.skipped << "\" time=\"" << JunitTime(s.duration_s) << "\" timestamp=\""
        << XmlEscapeAttribute(result.context.started_at) << "\" hostname=\""
        << XmlEscapeAttribute(result.context.host) << "\">\n";
    out << "    <properties>\n";
    Property(out, "outcome", ToString(s.outcome));
    Property(out, "file", s.file + ":" + std::to_string(s.line));
    Property(out, "description", s.description);
    Property(out, "mode", s.mode);
    Property(out, "backend", s.backend);
    Property(out, "ranks", std::to_string(s.ranks));
    Property(out, "steps", std::to_string(s.steps));
    Property(out, "reason", s.reason);
    Property(out, "run_dir", s.run_dir);
    out << "    </properties>\n";
    const std::string logs = RankLogs(s);
    for (const Case& c : suite.cases) RenderCase(out, c, s, logs);
    if (!logs.empty()) out << "    <system-out>" << XmlCData(logs) << "</system-out>\n";
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  if (!out) return IoError("junit reporter: write failed");
  return Status::Ok();
}

}  // namespace lockstep
