#include "bench/torch_profile.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>
#include <string>

namespace lockstep::bench {

Status ProfileSteps(const std::filesystem::path& path, bool cuda, int steps, const std::function<Status()>& step) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  const ProfilerConfig config(ProfilerState::KINETO);
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  bool enabled = false;
  try {
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    enabled = true;
    Status failed;
    for (int i = 0; i < steps && failed.ok(); ++i) {
      RECORD_USER_SCOPE(kProfileStepRange);
      failed = step();
    }
    std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
    enabled = false;
    LOCKSTEP_RETURN_IF_ERROR(failed.WithContext("a profiled step"));
    if (!result) return InternalError("the torch profiler returned no result");
    result->save(path.string());
  } catch (const c10::Error& e) {
    if (enabled) profiler::disableProfiler();
    return InternalError(std::string("torch profiler: ") + e.what_without_backtrace());
  }
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 || ec) {
    return InternalError("the torch profiler wrote no trace to " + path.string());
  }
  return Status::Ok();
}

}  // namespace lockstep::bench
