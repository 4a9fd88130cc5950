// Turns the trainer's state into trace records: digests every tracked tensor after each step and
// writes the collectives as they begin and end, so a hang shows where each rank waits.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/comm/collective_listener.h"
#include "harness/core/status.h"
#include "harness/trace/multi_tensor_digest.h"
#include "harness/trace/trace_writer.h"
#include "harness/trainer/trainer.h"

namespace lockstep {

class StepRecorder : public CollectiveListener {
 public:
  explicit StepRecorder(TraceWriter* writer);

  void set_step(int64_t step) { step_ = step; }
  // Digests the trainer's state as step `step` into `record`, in one pass over all its tensors
  // (MultiTensorDigest: the same digests and norms as MakeTensorRecord of each). `record` is
  // overwritten, reusing its storage: a caller that keeps one record for every step allocates
  // nothing per tensor once the tensors' names have been seen.
  Status Capture(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s, StepRecord& record);
  Status Write(const StepRecord& record);

  void OnCollectiveBegin(const CollectiveFingerprint& fp) override;
  void OnCollectiveEnd(const CollectiveFingerprint& fp, const Status& status) override;
  // The first error writing collective records (listeners cannot return one).
  const Status& status() const { return status_; }

 private:
  TraceWriter* writer_;
  MultiTensorDigest digests_;  // its buffers and descriptor seeds serve every step
  int64_t step_ = 0;
  Status status_;
};

double WallSeconds();

// One digest over every replicated tensor of a step: what --fail-fast compares across ranks.
Digest128 StepDigest(const StepRecord& record);  // since the process started recording

}  // namespace lockstep
