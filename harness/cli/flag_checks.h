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

// A whole number in [min, max], refused in lockstep's words ("must be a whole number from 1 to
// 65536, got '0'"): CLI11's own range message changed between releases (2.1: "Value 0 not in
// range 1 to 65536", 2.4: "Value 0 not in range [1 - 65536]"), and what a user's CI log says
// should not depend on the distribution's CLI11.
CLI::Validator WholeNumberBetween(long long min, long long max);

// `--mpirun-args` acts only where mpirun or srun starts the ranks; with the local launcher or
// none it would be dropped without a word, so it is refused (InvalidArgument, naming the flag).
Status CheckMpirunArgs(const std::vector<std::string>& mpirun_args, LauncherKind launcher);

// The flags of a launch on several hosts (docs/LAUNCHER.md, "Several hosts"), shared by run,
// exec and selftest: --nodes, --ntasks-per-node, --node-dir, --node-timeout.
void AddHostFlags(CLI::App& cmd, HostPlacement& hosts);
// They act only where the ranks run on a Slurm allocation's nodes (srun; torchrun and mpirun given
// --nodes): elsewhere they would be dropped without a word, so they are refused (naming the flag).
Status CheckHostFlags(const HostPlacement& hosts, LauncherKind launcher);

// torchrun and accelerate start a Python program (`lockstep exec`); lockstep's own scenarios
// (`lockstep run`, `lockstep repro`) start lockstep-rank with mpirun, srun, local or none, so
// those two are refused there (InvalidArgument, naming the flag and what to use instead).
Status CheckScenarioLauncher(LauncherKind launcher);

// LOCKSTEP_ASYNC_CAPTURE in this process's environment, which every rank inherits: a value no rank
// would take is refused here, once, naming the variable (harness/capture/async_capture_setting.h),
// by every subcommand that starts ranks (run, exec, selftest, repro).
Status CheckAsyncCaptureSetting();

}  // namespace lockstep
