// Checkers by name: the one list of every checker, each naming itself through Checker::name().
// Scenario validation, the CLI's --check and the runner all take their names from here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checkers/checker.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

// Every checker's name, in the registry's (and docs/CHECKERS.md's) order.
std::vector<std::string> CheckerNames();

// nullptr for a name that is no checker's.
std::unique_ptr<Checker> MakeChecker(std::string_view name);

// One checker per name, in order. A name that is not a checker still gets one, whose only
// finding is an error saying so: a bad configuration is a failing result, never a silent skip
// (scenario validation normally rejects such names before anything runs).
std::vector<std::unique_ptr<Checker>> MakeCheckers(const std::vector<std::string>& names);

// The checks that fit a scenario when it names none (docs/SCENARIOS.md#checks). Loaders get it
// through LoadOptions::default_checks.
std::vector<std::string> DefaultChecks(const Scenario& scenario);

}  // namespace lockstep
