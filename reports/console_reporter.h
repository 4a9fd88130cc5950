// The console: while a run goes on (as a RunListener) a line per scenario start and end, and on a
// terminal a progress bar with steps and ETA redrawn in place; plain lines only when the stream is
// not a terminal (CI logs). As a Reporter it renders a finished result's closing block, ending
// with the line CI tools read: "3 passed, 1 failed, ..."; the end of a live run prints the same.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>

#include "reports/reporter.h"

namespace lockstep {

class ConsoleReporter : public Reporter, public RunListener {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  // `interactive`: draw the progress bar (the stream is a terminal). `clock` is for tests.
  ConsoleReporter(std::ostream& out, bool interactive, Clock clock = SteadySeconds);

  // Progress bar when stdout is a terminal (isatty), plain lines otherwise.
  static ConsoleReporter ForStdout();
  static bool StdoutIsTerminal();
  static double SteadySeconds();

  std::string name() const override { return "console"; }
  // The closing block: how many scenarios ran, the failed ones, the summary line. Stateless, so
  // `lockstep report` can print it for a result read back from report.json.
  Status Render(const RunResult& result, std::ostream& out) const override;

  void OnRunStart(const RunContext& context, int scenario_count) override;
  void OnScenarioStart(const std::string& id, int ranks, int64_t steps, int hosts) override;
  void OnProgress(const std::string& id, int64_t step, int64_t steps) override;
  void OnScenarioEnd(const ScenarioResult& result) override;
  void OnRunEnd(const RunResult& result) override;

 private:
  void ClearBar();

  std::ostream& out_;
  bool interactive_;
  Clock clock_;
  std::mutex mu_;  // the launcher may report progress from a watcher thread
  std::map<std::string, double> started_at_;  // scenario id -> clock at start
  bool bar_drawn_ = false;
  double last_draw_ = -1;
  int scenario_count_ = 0;
  int scenarios_done_ = 0;
};

}  // namespace lockstep
