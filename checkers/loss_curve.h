// The loss curve of a run as reference and golden compare it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep {

// step -> mean over the ranks that recorded the step of their loss (NaN if any of them is NaN).
std::map<int64_t, double> MeanLossCurve(const std::vector<RankTrace>& traces);

}  // namespace lockstep
