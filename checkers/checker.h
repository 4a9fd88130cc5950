// A checker is a pure function of the traces, the scenario and the fixtures. It never talks to
// MPI, so it is tested on canned traces (fixtures/traces/).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checkers/step_judge.h"
#include "harness/result/finding.h"
#include "harness/result/launch_report.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

struct CheckContext {
  const Scenario& scenario;
  const std::vector<RankTrace>& traces;        // index = rank; may be shorter if a rank never wrote
  const LaunchReport& launch;                  // how the ranks ended (hang, crash, clean)
  const std::vector<RankTrace>* reference = nullptr;  // the 1-rank run, for `reference`
  // The 1-rank run that computes the global batch in the N ranks' pieces: its difference from
  // `reference` is the scenario's floating-point noise (`reference`'s tolerance).
  const std::vector<RankTrace>* reference_split = nullptr;
  const std::vector<RankTrace>* repeat = nullptr;     // a second run, for `determinism`
  std::filesystem::path fixtures_dir{};        // for `golden`
  std::string platform{};                      // platform fingerprint, for `golden`
  // The run's traces were streamed (checkers/streamed_traces.h): `traces` holds every record but
  // the steps' tensors, which only the step judges saw. A checker that reads tensors and has no
  // judge must not be handed such traces; RunCheckers turns that into an error finding.
  bool steps_without_tensors = false;
};


class Checker {
 public:
  virtual ~Checker() = default;
  virtual std::string_view name() const = 0;
  virtual std::vector<Finding> Check(const CheckContext& context) const = 0;
  // What the checker needs from a scenario file besides the traces (its companion runs, its
  // tolerances, its golden file), or empty. `lockstep check` and `lockstep exec` have no scenario
  // and skip such a checker, with this as the reason.
  virtual std::string_view needs_scenario() const { return {}; }
  // Whether it judges how the launcher saw the ranks end (crash, hang): `lockstep check` sees
  // only the traces and skips it.
  virtual bool needs_launch() const { return false; }
  // Whether it reads StepRecord::tensors. True unless a checker says otherwise, so one that says
  // nothing is handed whole traces (slow, never wrong).
  virtual bool reads_tensors() const { return true; }
  // Whether what it compares is recorded before any rank's first step (the trace headers, the
  // process groups made): it then judges a launch that timed out at start-up too, beside
  // `startup`, where it may say why a rank never started.
  virtual bool judges_start_up() const { return false; }
  // A checker that reads tensors step by step returns a fresh judge (checkers/step_judge.h) and
  // its Check() is JudgeInMemory over one; the runs' traces then stream through the judge and are
  // never held whole. `start`: what it compares with (reference's companion runs, golden's file).
  // nullptr: it reads no tensors, or reads them across steps of two runs and needs whole traces
  // (determinism: docs/ARCHITECTURE.md says why).
  virtual std::unique_ptr<StepJudge> StartJudge(const JudgeStart& start) const {
    (void)start;
    return nullptr;
  }
};

}  // namespace lockstep
