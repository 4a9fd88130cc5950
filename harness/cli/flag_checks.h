// Validators for flags that several subcommands share (run, exec).
#pragma once

#include <CLI/CLI.hpp>

namespace lockstep {

// Seconds in [min, max], as typed: "nan", "inf", "1e999" and "-3" are refused with the text the
// user wrote (CLI11's own range check prints the converted value, 309 digits for 1e308).
CLI::Validator SecondsBetween(double min, double max);

}  // namespace lockstep
