#include "harness/capture/async_capture_setting.h"

#include <cstdlib>
#include <string>

namespace lockstep {

Result<AsyncCapture> ParseAsyncCapture(std::string_view value) {
  if (value.empty() || value == "0") return AsyncCapture::kOff;
  if (value == "1") return AsyncCapture::kCuda;
  if (value == "host") return AsyncCapture::kHost;
  return InvalidArgumentError(std::string(kAsyncCaptureEnv) + "='" + std::string(value) +
                              "': expected 1 (CUDA tensors digested on a side stream), 0 (off), or host (host "
                              "tensors on host threads: the probe's tests)");
}

Result<AsyncCapture> AsyncCaptureFromEnvironment() {
  const char* value = std::getenv(kAsyncCaptureEnv);
  return ParseAsyncCapture(value ? value : "");
}

}  // namespace lockstep
