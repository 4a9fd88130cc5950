// Turns the trainer's state into trace records: digests every tracked tensor after each step and
// writes the collectives as they begin and end, so a hang shows where each rank waits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/capture/capture_device.h"
#include "harness/capture/tensor_capture.h"
#include "harness/comm/collective_listener.h"
#include "harness/core/status.h"
#include "harness/trace/trace_writer.h"
#include "harness/trainer/trainer.h"

namespace lockstep {

class StepRecorder : public CollectiveListener {
 public:
  explicit StepRecorder(TraceWriter* writer);
  ~StepRecorder() override;

  void set_step(int64_t step) { step_ = step; }
  // Digests the trainer's state as step `step` into `record`, in one pass over all its tensors
  // (MultiTensorDigest: the same digests and norms as MakeTensorRecord of each). `record` is
  // overwritten, reusing its storage: a caller that keeps one record for every step allocates
  // nothing per tensor once the tensors' names have been seen. While the trainer's StateEpoch()
  // is the one of the last capture into the same record, the state is not listed again: the
  // last list's tensors are digested where they lie (TensorCapture::Repeat). The first repeats
  // after each listing, and one in kRepeatCheckEvery after, are checked against the state listed
  // anew: a trainer that broke its word is an internal error naming the tensor.
  Status Capture(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s, StepRecord& record);
  Status Write(const StepRecord& record);
  // How many captures in a row, up to the last, repeated the last list (0: the last one listed).
  int64_t repeats() const { return repeats_; }

  // The asynchronous capture of a step's CUDA tensors (issue 47, item 3; harness/capture), which
  // lockstep-rank uses only when LOCKSTEP_ASYNC_CAPTURE=1 (docs/PERFORMANCE.md): the digests and
  // norms are queued on a side stream and each step's record is written once they land, in step
  // order, so the host never waits for the device there. Empty when this build and process can
  // use it; otherwise why not.
  static std::string AsyncCaptureUnavailable();
  // Begins step `step`'s capture and writes the records of the earlier steps that have landed. A
  // step whose tensors the device cannot all read where they lie (TensorCapture::Buffers, the
  // probe's rule too: a view, another device, a dtype whose norm is LibTorch's reduction) is
  // captured synchronously instead, after every step in flight was written. While the trainer's
  // StateEpoch() stays, the last list's buffers are handed to the device again, checked as
  // Capture()'s repeats are, before the device reads.
  Status CaptureAsync(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s);
  // Before the trainer queues anything that overwrites its state (the next step): the training
  // stream waits on the device for every capture's reads. Never blocks the host.
  Status GuardOverwrite();
  // Writes what has landed; with `wait`, waits for every capture in flight first (the run's end).
  Status FinishAsync(bool wait);
  // The steps whose capture was begun and whose record is not written (a rank ending with an error).
  std::vector<int64_t> CapturesInFlight() const;
  // The last step whose record was written by the asynchronous path (-1: none yet).
  int64_t last_async_step_written() const { return last_async_step_written_; }
  // Tests: the asynchronous capture over `device` (a SimulatedCaptureDevice), which reads host
  // tensors where they are, instead of a CUDA device; its ordering with the training is the test's.
  void UseCaptureDeviceForTesting(std::unique_ptr<CaptureDevice> device);

  void OnCollectiveBegin(const CollectiveFingerprint& fp) override;
  void OnCollectiveEnd(const CollectiveFingerprint& fp, const Status& status) override;
  // The first error writing collective records (listeners cannot return one).
  const Status& status() const { return status_; }

 private:
  static constexpr int64_t kRepeatsCheckedFirst = 2;
  static constexpr int64_t kRepeatCheckEvery = 32;

  // Whether capture_'s list, which the step's capture repeats into `record`, is the state listed
  // anew: the same records' descriptions, each tensor read at the same place as the same bytes.
  Status CheckRepeat(Trainer& trainer, int64_t step, const StepRecord& record);

  TraceWriter* writer_;
  TensorCapture capture_;  // its buffers and descriptor seeds serve every step
  uint64_t listed_epoch_ = 0;  // the trainer's StateEpoch() when capture_'s list was made (0: none)
  int64_t repeats_ = 0;        // captures that repeated that list
  TensorCapture check_capture_;  // CheckRepeat's list, and its records' descriptions
  StepRecord check_record_;
  struct AsyncCapture;  // the pipeline, its device, and the records waiting for their results
  std::unique_ptr<AsyncCapture> async_;
  int64_t last_async_step_written_ = -1;
  int64_t step_ = 0;
  Status status_;
};

// Seconds since the process started recording, in whole microseconds (exact as the trace writes them).
double WallSeconds();

// One digest over every replicated tensor of a step: what --fail-fast compares across ranks.
Digest128 StepDigest(const StepRecord& record);  // since the process started recording

}  // namespace lockstep
