// A torch-profiler (Kineto) trace of a few steps, for the GPU run's cost check (issue 49): the
// same steps profiled with and without lockstep's checks, saved as Chrome trace JSON, and
// ci/gpu-profile-breakdown.py says where each microsecond of the difference goes. Each step is
// inside a user range named `profile.step`; lockstep's own work names itself with `lockstep.*`
// ranges (StepRecorder, MultiTensorDigest, the probe), which cost a flag test when no profiler runs.
#ifndef LOCKSTEP_BENCH_TORCH_PROFILE_H_
#define LOCKSTEP_BENCH_TORCH_PROFILE_H_

#include <filesystem>
#include <functional>

#include "harness/core/status.h"

namespace lockstep::bench {

// The range each profiled step is in (ci/gpu-profile-breakdown.py's STEP).
inline constexpr char kProfileStepRange[] = "profile.step";

// Runs `step` `steps` times under the profiler (CPU operators and user ranges; with `cuda`, the
// CUDA runtime calls and the device's kernels and copies too) and writes the trace to `path`.
// An error of the profiler or of a step is returned; nothing is left enabled.
Status ProfileSteps(const std::filesystem::path& path, bool cuda, int steps, const std::function<Status()>& step);

}  // namespace lockstep::bench

#endif  // LOCKSTEP_BENCH_TORCH_PROFILE_H_
