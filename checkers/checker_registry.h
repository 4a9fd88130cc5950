// Checkers by name: the one list of every checker, each naming itself through Checker::name().
// Scenario validation, the CLI's --check and the runner all take their names from here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkers/checker.h"
#include "harness/result/launch_report.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/symptom.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Every checker's name, in the registry's (and docs/CHECKERS.md's) order.
std::vector<std::string> CheckerNames();

// nullptr for a name that is no checker's.
std::unique_ptr<Checker> MakeChecker(std::string_view name);

// One checker per name, in order. A name that is not a checker still gets one, whose only
// finding is an error saying so: a bad configuration is a failing result, never a silent skip
// (scenario validation normally rejects such names before anything runs).
std::vector<std::unique_ptr<Checker>> MakeCheckers(const std::vector<std::string>& names);

// The kind of the tensors a checker's findings name (what `lockstep repro` dumps for them);
// nullopt for a checker whose findings name none, or no checker.
std::optional<TensorKind> TensorKindNamedBy(std::string_view checker);

// The checkers the ranks run themselves on one step's exchanged tables (`--compare in-band`,
// checkers/in_band_comparison.h), in the registry's order.
std::vector<std::string> InBandCheckerNames();

// The checker that judges a launch that ended so (crash, hang, startup timeout), whatever a
// scenario's `checks:` lists; nullopt for the endings none judges.
std::optional<std::string> CheckerJudging(LaunchEnding ending);

// A run besides the scenario's own that a checker compares with: CheckContext's `reference`
// (the 1-rank run), `reference_split` (the same in the N ranks' pieces), `repeat` (a second run).
enum class Companion { kReference, kReferenceSplit, kRepeat };

// The companion runs the checks need, each with the checker that needs it, in the registry's
// order (the runner launches them in this order).
std::vector<std::pair<std::string, Companion>> CompanionRuns(const std::vector<std::string>& checks);

// What a list of checks can see of an injected bug (harness/scenario/symptom.h), counting the
// checkers that judge how a launch ended, which run whatever the list says.
Symptoms SymptomsSeenBy(const std::vector<std::string>& checks);

// The checkers that see any of `symptoms`, in the registry's order.
std::vector<std::string> CheckersSeeing(Symptoms symptoms);

// The checks that fit a scenario when it names none (docs/SCENARIOS.md#checks). Loaders get it
// through LoadOptions::default_checks.
std::vector<std::string> DefaultChecks(const Scenario& scenario);

}  // namespace lockstep
