// Reporters render a finished RunResult (google/benchmark style: plain data in, stream handed
// in, never owned). The console reporter is the one that streams while scenarios run.
#pragma once

#include <ostream>
#include <string>

#include "harness/core/status.h"
#include "harness/result/run_result.h"

namespace lockstep {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string name() const = 0;  // "json", "junit", "markdown", "html"
  virtual Status Render(const RunResult& result, std::ostream& out) const = 0;
};

// Live progress while a run goes on (the console). End events arrive in the order scenarios end.
class RunListener {
 public:
  virtual ~RunListener() = default;
  virtual void OnRunStart(const RunContext& /*context*/, int /*scenario_count*/) {}
  // `hosts`: how many hosts the ranks are placed on when that is known before they start (a
  // launch on several hosts given --nodes), else 0.
  virtual void OnScenarioStart(const std::string& /*id*/, int /*ranks*/, int64_t /*steps*/, int /*hosts*/) {}
  virtual void OnProgress(const std::string& /*id*/, int64_t /*step*/, int64_t /*steps*/) {}
  virtual void OnScenarioEnd(const ScenarioResult& /*result*/) {}
  virtual void OnRunEnd(const RunResult& /*result*/) {}
};

}  // namespace lockstep
