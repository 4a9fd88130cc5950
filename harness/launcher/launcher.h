// Starts the N ranks of one scenario (any program), watches their traces, and ends them cleanly:
// a hang, a crash, a timeout or a SIGINT/SIGTERM to us all end with every process of the launch
// gone and a LaunchReport that says why. docs/LAUNCHER.md describes the behaviour in full.
//
// The folder, from the bottom: launch_spec.h (what is asked), launcher_kind.h (each kind's row:
// how it starts the ranks), launch_command.h (the command lines), process_tree.h,
// trace_watcher.h and rank_cpu.h (what is observed), stall_judgement.h and launch_judgement.h
// (pure rules: a hang, and how the launch ended), this file's Launch (the watch loop).
#pragma once

#include "harness/core/status.h"
#include "harness/launcher/launch_spec.h"
#include "harness/result/launch_report.h"

namespace lockstep {

// Runs the launch to its end. An error Status means the spec itself is unusable (no ranks, no
// command); everything that goes wrong at run time, starting included, is a LaunchReport ending.
Result<LaunchReport> Launch(const LaunchSpec& spec, const ProgressCallback& on_progress = {});

}  // namespace lockstep
