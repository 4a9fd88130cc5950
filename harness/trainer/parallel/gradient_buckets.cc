#include "harness/trainer/parallel/gradient_buckets.h"

namespace lockstep {

std::vector<GradientBucket> AssignBuckets(const std::vector<int64_t>& param_numel,
                                          int64_t bytes_per_element, double bucket_mb) {
  const double cap_bytes = bucket_mb * 1024.0 * 1024.0;
  std::vector<GradientBucket> buckets;
  GradientBucket current;
  for (int i = static_cast<int>(param_numel.size()) - 1; i >= 0; --i) {
    const double bytes = static_cast<double>((current.numel + param_numel[i]) * bytes_per_element);
    if (!current.params.empty() && bytes > cap_bytes) {
      buckets.push_back(std::move(current));
      current = GradientBucket{};
    }
    current.params.push_back(i);
    current.numel += param_numel[i];
  }
  if (!current.params.empty()) buckets.push_back(std::move(current));
  return buckets;
}

}  // namespace lockstep
