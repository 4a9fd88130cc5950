// The resolve stage: a scenario as this run will launch it, the command line's overrides applied
// once, with the result the report starts from; or the refusal that ends it before any rank
// starts (the override breaks a rule, or the rank program cannot run it here).
#pragma once

#include "harness/result/run_result.h"
#include "harness/runner/rank_program.h"
#include "harness/scenario/scenario_overrides.h"

namespace lockstep {

struct ResolvedScenario {
  Scenario scenario;      // overrides applied (the input as it was when they break a rule)
  ScenarioResult result;  // id, file, mode, backend, ranks, steps, run_dir; the verdict when refused
  bool refused = false;
};

ResolvedScenario Resolve(const Scenario& input, const ScenarioOverrides& overrides, const RankProgram& program,
                         LauncherKind launcher);

}  // namespace lockstep
