// What a run can honour: the bounds `validate` checks every scenario value against, so that a
// scenario that validates is one that runs (docs/SCENARIOS.md lists them). The CLI's overrides
// (--hang-timeout) are held to the same bounds.
#pragma once

#include <cfloat>
#include <cstdint>
#include <string_view>

#include "harness/core/untrusted_input.h"

namespace lockstep {

// An id is a folder path under the run directory: each part a file name well below NAME_MAX
// (255) and the whole well below PATH_MAX once out/<id>/reference/traces/rank-N.trace is added.
inline constexpr std::size_t kMaxIdPartLength = 100;
inline constexpr std::size_t kMaxIdLength = 200;
// Names the run directory's own files take; an id may not start with one.
inline constexpr std::string_view kReservedIds[] = {"report.json"};

inline constexpr int64_t kMaxRanks = kMaxWorldSize;  // harness/core/untrusted_input.h
inline constexpr int64_t kMaxSteps = 1000000;
// Per model dimension; the largest shipped scenario uses hidden 64.
inline constexpr int64_t kMaxHidden = 16384;
inline constexpr int64_t kMaxModelDim = 1 << 20;   // input_dim, output_dim, vocab, seq_len
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxCount = 65536;        // heads, batch_per_rank, grad_accum, discovery_calls
// The launcher looks at the traces every 0.1 s and a rank needs a moment to start: a shorter
// hang timeout declares a healthy run hung.
inline constexpr double kMinHangTimeoutS = 1.0;
inline constexpr double kMaxTimeoutS = 1e6;       // about 11 days, for timeout_s and hang_timeout_s
// Optimizer values are float32 in the trainer: a positive value must be a normal float.
inline constexpr double kMinPositiveFloat = FLT_MIN;
inline constexpr double kMaxFloat = FLT_MAX;
inline constexpr double kMaxBucketMb = 1 << 20;
// `crash` injection: the signals the docs allow, and the exit codes a process can return.
inline constexpr int kMinCrashExitCode = 1;
inline constexpr int kMaxCrashExitCode = 255;

}  // namespace lockstep
