// Canned traces for the diff tests: N ranks that recorded the same run, built in code, and a
// writer that lays them out as a run directory would hold them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep::testing {

// Steps 0..steps on every rank (loss NaN at step 0, as the trainer writes it), each with params
// fc1.weight, fc1.bias, fc2.weight, their grads, fc1.weight#momentum_buffer and bn.running_mean;
// a clean-exit footer. Digests depend only on (kind, name, step): every rank and every call agree.
std::vector<RankTrace> CannedTraces(int ranks, int64_t steps, const std::string& scenario_id = "canned");

TensorRecord& FindTensor(std::vector<RankTrace>& traces, int rank, int64_t step, TensorKind kind,
                         const std::string& name);

// From `from_step` on, `rank` records another digest for the tensor and its norm times (1 + rel_norm).
void Corrupt(std::vector<RankTrace>& traces, int rank, TensorKind kind, const std::string& name, int64_t from_step,
             double rel_norm = 1e-3);

// Drops `rank`'s steps after `last_step` and its footer, as if it died there.
void Cut(std::vector<RankTrace>& traces, int rank, int64_t last_step);

// Writes dir/rank-<r>.trace for every rank with TraceWriter.
Status WriteTraces(const std::vector<RankTrace>& traces, const std::filesystem::path& dir);

// A fresh, empty folder under the temp dir, unique per process and name.
std::filesystem::path FreshTempDir(const std::string& name);

}  // namespace lockstep::testing
