// Validators for flags that several subcommands share (run, exec).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/launcher/launcher.h"

namespace lockstep {

// Seconds in [min, max], as typed: "nan", "inf", "1e999" and "-3" are refused with the text the
// user wrote (CLI11's own range check prints the converted value, 309 digits for 1e308).
CLI::Validator SecondsBetween(double min, double max);

// `--mpirun-args` acts only where mpirun or srun starts the ranks; with the local launcher or
// none it would be dropped without a word, so it is refused (InvalidArgument, naming the flag).
Status CheckMpirunArgs(const std::vector<std::string>& mpirun_args, LauncherKind launcher);

// torchrun and accelerate start a Python program (`lockstep exec`); lockstep's own scenarios
// (`lockstep run`, `lockstep repro`) start lockstep-rank with mpirun, srun, local or none, so
// those two are refused there (InvalidArgument, naming the flag and what to use instead).
Status CheckScenarioLauncher(LauncherKind launcher);

}  // namespace lockstep
