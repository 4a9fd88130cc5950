#include "harness/runner/resolved_scenario.h"

#include <algorithm>

namespace lockstep {

ResolvedScenario Resolve(const Scenario& input, const ScenarioOverrides& overrides, const RankProgram& program,
                         LauncherKind launcher) {
  ResolvedScenario resolved;
  Result<Scenario> applied = ApplyOverrides(overrides, input);
  resolved.scenario = applied.ok() ? *applied : input;
  const Scenario& s = resolved.scenario;
  ScenarioResult& r = resolved.result;
  r.id = s.name;
  r.file = s.location.file;
  r.line = std::max(1, s.location.line);
  r.description = s.description;
  const RunLabel label = program.Label(s);
  r.mode = label.mode;
  r.backend = label.backend;
  r.ranks = s.ranks;
  r.steps = s.steps;
  r.run_dir = s.name;
  std::optional<Refusal> refusal;
  if (!applied.ok()) refusal = Refusal{Outcome::kError, applied.status().message()};
  if (!refusal) refusal = program.Refuses(s, launcher);
  if (refusal) {
    resolved.refused = true;
    r.outcome = refusal->outcome;
    r.reason = refusal->reason;
  }
  return resolved;
}

}  // namespace lockstep
