// Canned runs for checker tests, built in code: N ranks that agree on everything until a test
// changes what one rank recorded. Each rank has params w0..w2, their grads and momentum
// (replicated optimizer state), a BatchNorm buffer, one discovery call, two all_reduces per
// step (one at step 0: the initial broadcast) and a clean-exit footer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkers/checker.h"

namespace lockstep::testing {

struct CannedRun {
  CannedRun(int ranks, int64_t steps);

  Scenario scenario;
  std::vector<RankTrace> traces;
  LaunchReport launch;

  CheckContext Context() const { return CheckContext{scenario, traces, launch}; }

  // The record of `name` of `kind` at `step` on `rank` (aborts the test binary if absent).
  TensorRecord& Tensor(int rank, int64_t step, TensorKind kind, const std::string& name);
  StepRecord& Step(int rank, int64_t step);

  // From `from_step` on, rank `rank` records another digest for the tensor, and its norm
  // multiplied by (1 + rel_norm).
  void Diverge(int rank, TensorKind kind, const std::string& name, int64_t from_step, double rel_norm = 1e-3);

  // Inserts `extra` into `group` (default: world) on `rank` at `seq`, shifting the later
  // collectives of the group by one.
  void InsertCollective(int rank, uint64_t seq, CollectiveRecord extra);
  // Drops every record of `rank` after `last_step` and its footer, as if it died there; its
  // collectives of later steps are dropped too.
  void Cut(int rank, int64_t last_step);
};

// A digest that stands for a value: equal inputs, equal digests.
Digest128 FakeDigest(const std::string& what);

}  // namespace lockstep::testing
