// A step's capture that never makes the host wait for the device (issue 47, item 3): the digests
// and norms of a step's device tensors are queued on a side stream after an event on the training
// stream, their results copied to host memory there, and the step's record completed when the copy
// has landed, which the writer side asks without blocking. The training stream is made to wait on
// the device, not the host, before anything overwrites what a capture still reads.
//
// This class is the ordering logic, the same for every device (capture_device.h): which slot a step
// uses, that records complete in step order, when the training stream must wait, what happens when
// the device falls behind, which steps a dead rank had in flight. Tested with threads as streams
// (SimulatedCaptureDevice, capture_pipeline_test.cc); run on a GPU by CudaCaptureDevice.
//
// Usage, one step after another on the training thread:
//   Begin(step, buffers)  after the step's work was queued on the training stream;
//   GuardOverwrite()      before anything that may overwrite those buffers is queued there (the
//                         next optimizer step, a forward pass updating buffers in place);
//   Poll(out)             whenever convenient: the steps that have landed, in step order;
//   Drain(out)            at the end of the run (the one place it waits for the device besides a
//                         full depth).
// The buffers must stay allocated until their step comes out of Poll or Drain (the caller keeps
// its tensors alive: a freed block reused by the allocator would be overwritten without any wait).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "harness/capture/capture_device.h"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// One step's capture, complete: digest and norm of each buffer, in Begin's order.
struct CapturedStep {
  int64_t step = 0;
  std::vector<Digest128> digests;
  // sqrt of the sum of the chunks' sums of squares, added in chunk order: the bits TensorL2Norm
  // gives on the CPU. NaN for a buffer begun with SquaredAs::kNone (the caller's to fill).
  std::vector<double> norms;
};

class CapturePipeline {
 public:
  // `max_in_flight` (>= 1) slots: captures begun and not yet landed. When the host is that many steps
  // ahead of the device, Begin waits for the oldest one to land (see Begin).
  CapturePipeline(CaptureDevice* device, int max_in_flight);
  CapturePipeline(const CapturePipeline&) = delete;
  CapturePipeline& operator=(const CapturePipeline&) = delete;

  // Begins the capture of `step` (greater than every step begun before) over `buffers`. Returns
  // when the work is queued, without waiting for the device, unless max_in_flight captures are in
  // flight: then it first waits on the host for the oldest to land (backpressure). Without that
  // bound a device slower than the host would let captures, and the memory they keep alive, pile
  // up without limit; dropping a step's capture instead would leave a hole in the trace, which is
  // worse than a wait. host_waits() counts them.
  Status Begin(int64_t step, const std::vector<CaptureBuffer>& buffers);

  // Orders the training stream after the reads of every capture begun so far (device side:
  // cudaStreamWaitEvent). Call before queuing anything that overwrites a captured buffer. Each
  // capture is waited for once; a second call with nothing new begun queues nothing.
  Status GuardOverwrite();

  // Appends the captures that have landed, in step order, stopping at the first that has not:
  // a later step that landed first (several side streams, several devices) waits for it. Never
  // blocks. An error of the device fails every capture after it.
  Status Poll(std::vector<CapturedStep>& out);

  // Waits for every capture begun to land and appends them, in step order.
  Status Drain(std::vector<CapturedStep>& out);

  // The steps begun whose results have not come out of Poll or Drain, in step order: what a rank
  // that dies now had in flight.
  std::vector<int64_t> InFlight() const;

  // How often Begin waited for the device because max_in_flight captures were in flight.
  int64_t host_waits() const { return host_waits_; }
  int max_in_flight() const { return static_cast<int>(slot_free_.size()); }

 private:
  struct Pending {
    int64_t step = 0;
    int slot = 0;
    bool guarded = false;  // the training stream waits for its reads
    std::vector<size_t> chunk_counts;
    std::vector<uint64_t> seeds;
    std::vector<bool> summed;
  };

  // Takes the oldest capture's results off its slot (it has landed) into `out`.
  Status Complete(std::vector<CapturedStep>& out);

  CaptureDevice* device_;
  std::vector<bool> slot_free_;
  std::deque<Pending> pending_;  // begun, not yet completed, in step order
  // Completed by Begin at a full depth, before Poll asked: older than every step in pending_.
  std::vector<CapturedStep> landed_early_;
  int64_t last_step_ = std::numeric_limits<int64_t>::min();
  int64_t host_waits_ = 0;
  Status failed_;  // the first device error: every later call returns it
  std::vector<Digest128> chunk_digests_;
  std::vector<double> chunk_square_sums_;
};

}  // namespace lockstep
