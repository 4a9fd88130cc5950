// The self-test's verdict on each injection scenario: was the injected bug caught, at its onset
// step, on the right rank (and tensor, where the injection names one), and how many steps late.
// Pure: built from a scenario and its finished result, so it is tested on canned results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/result/run_result.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

struct DetectionRow {
  std::string scenario;
  std::string kind;        // the injection kind
  std::string mode;        // "ddp", "zero1/slices=2", ...
  int64_t onset = 0;
  bool caught = false;     // a finding of an expected checker on the injected rank(s)
  std::optional<int64_t> detected_step;  // the earliest such finding's step
  bool at_onset = false;
  bool right_rank = false;
  std::optional<bool> right_tensor;      // only when the injection names a tensor
  std::string outcome;     // the scenario's outcome: xfail is the good one
  std::string note;        // why it is not a clean catch
  bool ok() const;         // caught at onset, right rank (and tensor), outcome xfail
  std::optional<int64_t> latency() const;  // detected_step - onset
};

DetectionRow EvaluateDetection(const Scenario& scenario, const ScenarioResult& result);

struct FalsePositiveCount {
  int runs = 0;
  int false_positives = 0;            // clean runs whose outcome was not pass
  std::vector<std::string> offenders;  // "id (run 3): replica_weights step 2 ..."
};

// Markdown: the detection table, then the false-positive line.
std::string RenderDetectionTable(const std::vector<DetectionRow>& rows, const FalsePositiveCount& clean,
                                 int repeats);

}  // namespace lockstep
