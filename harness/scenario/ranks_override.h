// `lockstep run --ranks N`: one scenario file run at another world size (nccl takes one rank per
// GPU, so the suite's world follows the machine). The override is held to the rules the loader
// holds `ranks` to, so that an overridden scenario is one that could have been written.
#pragma once

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"

namespace lockstep {

// Sets s.ranks to `ranks`, or returns InvalidArgument naming the scenario (file and id) and the
// rule it breaks: ranks outside [1, kMaxRanks], not a multiple of `slices`, or fewer ranks than an
// `inject:` or `expect: fail:` entry names. `s` is unchanged on error.
Status OverrideRanks(int ranks, Scenario& s);

}  // namespace lockstep
