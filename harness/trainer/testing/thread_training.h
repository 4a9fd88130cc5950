// Test helper: trains a scenario on in-process thread ranks and returns each rank's per-step
// loss and digests of its replicated tensors.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"
#include "harness/trainer/trainer.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep::trainer_testing {

struct StepState {
  double loss = 0;
  std::map<std::string, std::string> digests;  // "param:fc.weight" -> hex, replicated tensors only
};
using RankRun = std::vector<StepState>;  // index = step

Scenario BaseScenario(ModelKind kind);

// `make_hooks(rank)` may return null; the hooks live for the run.
std::vector<RankRun> Train(const Scenario& scenario,
                           const std::function<std::unique_ptr<TrainingHooks>(int)>& make_hooks = {});

}  // namespace lockstep::trainer_testing
