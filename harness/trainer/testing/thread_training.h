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

// Called on each rank's thread with the trainer as step `step` left it: after Initialize (step 0)
// and after every optimizer step. The ranks call it concurrently.
using StepObserver = std::function<void(int rank, int64_t step, Trainer& trainer)>;

// `make_hooks(rank)` may return null; the hooks live for the run. `observe` may be empty.
std::vector<RankRun> Train(const Scenario& scenario,
                           const std::function<std::unique_ptr<TrainingHooks>(int)>& make_hooks = {},
                           const StepObserver& observe = {});

}  // namespace lockstep::trainer_testing
