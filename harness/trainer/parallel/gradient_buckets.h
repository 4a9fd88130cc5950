// DDP's bucketing: parameters in reverse registration order (the order backward produces their
// gradients), packed into buckets of at most bucket_mb; a parameter larger than a bucket gets one
// of its own.
#pragma once

#include <cstdint>
#include <vector>

namespace lockstep {

struct GradientBucket {
  std::vector<int> params;  // indices into the parameter list, in bucket order
  int64_t numel = 0;
};

std::vector<GradientBucket> AssignBuckets(const std::vector<int64_t>& param_numel,
                                          int64_t bytes_per_element, double bucket_mb);

}  // namespace lockstep
