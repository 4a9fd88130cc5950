// LOCKSTEP_ASYNC_CAPTURE, which asks for the capture off the host's critical path
// (capture_pipeline.h): read by lockstep-rank (StepRecorder::CaptureAsync) and by the probe
// (probe/deferred_steps.h), checked by `lockstep run` and `lockstep exec` before they start
// anything, so that a mistyped value is refused once, naming the variable, instead of each rank
// failing on its own.
#pragma once

#include <string_view>

#include "harness/core/status.h"

namespace lockstep {

inline constexpr char kAsyncCaptureEnv[] = "LOCKSTEP_ASYNC_CAPTURE";

enum class AsyncCapture {
  kOff,   // unset, "" or "0": every capture digests at once
  kCuda,  // "1": CUDA tensors on a side stream (CudaCaptureDevice)
  kHost,  // "host": host tensors on host threads (the probe's tests run programs through it)
};

// InvalidArgument naming the variable and the values it takes for anything else.
Result<AsyncCapture> ParseAsyncCapture(std::string_view value);

// The process's own setting (the environment; unset is kOff).
Result<AsyncCapture> AsyncCaptureFromEnvironment();

}  // namespace lockstep
