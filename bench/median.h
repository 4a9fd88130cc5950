// The median of a benchmark's per-iteration samples: what every lockstep-bench counter reports,
// so one slow iteration (a page fault, a preempted rank) does not move the number.
#pragma once

#include <algorithm>
#include <vector>

namespace lockstep {
namespace bench {

// 0 for no samples; the mean of the two middle samples for an even count.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace bench
}  // namespace lockstep
