#include "reports/console_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "reports/report_text.h"

namespace lockstep {
namespace {

constexpr int kBarWidth = 24;
// A redraw per step of a fast scenario would flood a slow terminal; 10 per second is smooth.
constexpr double kMinRedrawInterval_s = 0.1;

const char* Label(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "[ PASS ]";
    case Outcome::kFail: return "[ FAIL ]";
    case Outcome::kXfail: return "[ XFAIL]";
    case Outcome::kXpass: return "[ XPASS]";
    case Outcome::kError: return "[ ERROR]";
    case Outcome::kTimeout: return "[TIMEOUT]";
    case Outcome::kSkipped: return "[ SKIP ]";
  }
  return "[  ??  ]";
}

std::string ShortSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", seconds);
  return buf;
}

std::string Eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%02ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

}  // namespace

ConsoleReporter::ConsoleReporter(std::ostream& out, bool interactive, Clock clock)
    : out_(out), interactive_(interactive), clock_(std::move(clock)) {}

bool ConsoleReporter::StdoutIsTerminal() { return isatty(STDOUT_FILENO) == 1; }

ConsoleReporter ConsoleReporter::ForStdout() { return ConsoleReporter(std::cout, StdoutIsTerminal()); }

double ConsoleReporter::SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void ConsoleReporter::ClearBar() {
  if (!bar_drawn_) return;
  out_ << "\r\033[K";  // carriage return, erase to end of line
  bar_drawn_ = false;
}

void ConsoleReporter::OnRunStart(const RunContext& context, int scenario_count) {
  std::lock_guard<std::mutex> lock(mu_);
  scenario_count_ = scenario_count;
  scenarios_done_ = 0;
  out_ << "[==========] lockstep: " << scenario_count << (scenario_count == 1 ? " scenario" : " scenarios");
  if (!context.backend.empty()) out_ << ", backend " << context.backend;
  if (!context.launcher.empty()) out_ << ", launcher " << context.launcher;
  out_ << "\n" << std::flush;
}

void ConsoleReporter::OnScenarioStart(const std::string& id, int ranks, int64_t steps, int hosts) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearBar();
  started_at_[id] = clock_();
  out_ << "[ RUN  ] " << id << " (" << ranks << (ranks == 1 ? " rank" : " ranks");
  if (hosts > 1) out_ << " on " << hosts << " hosts";
  // A user's program (exec) decides its own steps: no count until they are recorded.
  if (steps > 0) out_ << ", " << steps << (steps == 1 ? " step" : " steps");
  out_ << ")\n" << std::flush;
}

void ConsoleReporter::OnProgress(const std::string& id, int64_t step, int64_t steps) {
  if (!interactive_) return;  // CI logs get the start and end lines only
  std::lock_guard<std::mutex> lock(mu_);
  const double now = clock_();
  if (last_draw_ >= 0 && now - last_draw_ < kMinRedrawInterval_s && step < steps) return;
  last_draw_ = now;
  auto it = started_at_.find(id);
  const double elapsed = it == started_at_.end() ? 0 : now - it->second;
  const double fraction = steps > 0 ? std::min(1.0, std::max(0.0, double(step) / double(steps))) : 0.0;
  const double eta = step > 0 ? elapsed / double(step) * double(steps - step) : NAN;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  out_ << "\r\033[K[" << bar << "] " << id << " step " << step << "/" << steps << " ETA " << Eta(eta);
  if (scenario_count_ > 1) out_ << " (scenario " << scenarios_done_ + 1 << "/" << scenario_count_ << ")";
  out_ << std::flush;
  bar_drawn_ = true;
}

void ConsoleReporter::OnScenarioEnd(const ScenarioResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearBar();
  ++scenarios_done_;
  started_at_.erase(result.id);
  out_ << Label(result.outcome) << " " << result.id;
  if (IsFailure(result.outcome)) {
    if (const Finding* f = KeyFinding(result)) {
      out_ << ": " << FindingHeadline(*f);
      // A harness error's headline is only the checker's name ("reference"): say what broke.
      if (f->outcome == FindingOutcome::kError && !f->message.empty()) {
        out_ << ": " << f->message.substr(0, f->message.find('\n'));
      }
      size_t others = 0;
      for (const Finding& g : result.findings) others += (&g != f && g.outcome != FindingOutcome::kExpected);
      if (others > 0) out_ << " (+" << others << " more)";
      if (!f->cause.empty()) out_ << "\n  " << CauseLine(*f);
    } else if (!result.reason.empty()) {
      out_ << ": " << result.reason;
    }
  } else {
    out_ << " " << ShortSeconds(result.duration_s);
    // A pass that compared no replicated parameter says so: it is not the pass it looks like.
    if (const std::string nothing = NothingComparedNote(result); !nothing.empty()) out_ << ": " << nothing;
    if (result.outcome == Outcome::kXfail) {
      if (const Finding* f = KeyFinding(result)) out_ << " (expected: " << FindingHeadline(*f) << ")";
    } else if (result.outcome == Outcome::kSkipped && !result.reason.empty()) {
      out_ << ": " << result.reason;
    }
  }
  out_ << "\n";
  if (const std::string judged = JudgedSummary(result); !judged.empty()) {
    out_ << "  " << result.steps << (result.steps == 1 ? " step" : " steps") << " recorded" << HostsPhrase(result)
         << "; compared: " << judged << "\n";
  } else if (const std::string hosts = HostsPhrase(result); !hosts.empty()) {
    out_ << "  ran" << hosts << "\n";
  }
  out_ << std::flush;
}

Status ConsoleReporter::Render(const RunResult& result, std::ostream& out) const {
  const OutcomeCounts counts = CountOutcomes(result);
  out << "[==========] " << counts.total << (counts.total == 1 ? " scenario" : " scenarios") << " ran in "
      << ShortSeconds(result.context.duration_s) << "\n";
  for (const ScenarioResult& s : result.scenarios) {
    if (IsFailure(s.outcome)) out << "[  FAILED  ] " << s.id << " (" << ToString(s.outcome) << ")\n";
  }
  out << SummaryLine(counts) << "\n" << std::flush;
  if (!out) return IoError("console: cannot write the summary");
  return Status::Ok();
}

void ConsoleReporter::OnRunEnd(const RunResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearBar();
  // A console that cannot be written to has nobody to tell; report.json still holds the result.
  (void)Render(result, out_);
}

}  // namespace lockstep
