// Checkers by name (checker_names.h lists them all).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checkers/checker.h"

namespace lockstep {

// nullptr for a name that is not in kCheckerNames.
std::unique_ptr<Checker> MakeChecker(std::string_view name);

// One checker per name, in order. A name that is not a checker still gets one, whose only
// finding is an error saying so: a bad configuration is a failing result, never a silent skip
// (scenario validation normally rejects such names before anything runs).
std::vector<std::unique_ptr<Checker>> MakeCheckers(const std::vector<std::string>& names);

}  // namespace lockstep
