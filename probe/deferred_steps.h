// The probe's step records with their digests landing later (issue 47, item 3, for `lockstep
// exec`): a list's tensors are digested by a CaptureDevice on its own stream (CapturePipeline), the
// record of the step they belong to is assembled and written when every part has landed, in step
// order, and the host never waits for the device to get there. Without it, every capture copied
// its digests back at once, and each such copy made the program's host wait until the device had
// run everything queued before it, the step that the host was launching ahead of.
//
// The program is not ours, so nothing is assumed about when it next writes a captured tensor
// (zero_grad(set_to_none=False) zeroes gradients in place, the forward updates buffers): the
// training stream waits on the device for a capture's reads as soon as it is begun. It never waits
// on the host, except when `max_in_flight` captures are in flight (CapturePipeline's bound).
//
// Only work on the default CUDA stream is ordered this way: a list whose program runs on another
// stream (probe_module.cc asks torch.cuda) is digested at once, as is a list a device cannot read
// where it is (TensorCapture::Buffers).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/capture/capture_device.h"
#include "harness/capture/capture_pipeline.h"
#include "harness/capture/multi_tensor_digest.h"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep::probe {

// Tensor records taken at one moment (gradients right after the optimizer step, before the program
// zeroes them), written later as part of a step record. `pending`: the DeferredSteps capture whose
// results are the records' digests and norms, in order; 0 when they are set already.
struct Captured {
  std::vector<TensorRecord> records;
  int64_t pending = 0;
};

class DeferredSteps {
 public:
  // Captures of buffers in `place`, read by `device` (tests: a SimulatedCaptureDevice over host
  // memory), at most `max_in_flight` at a time.
  DeferredSteps(std::unique_ptr<CaptureDevice> device, BufferPlace place, int max_in_flight);
  ~DeferredSteps();
  DeferredSteps(const DeferredSteps&) = delete;
  DeferredSteps& operator=(const DeferredSteps&) = delete;

  // From the value of LOCKSTEP_ASYNC_CAPTURE (harness/capture/async_capture_setting.h): null when
  // off; for "1", the tensors of a CUDA device (the device of the first list captured there) on
  // its default stream, when this build has the CUDA capture (an error otherwise); for "host", host
  // tensors of a program whose host thread is its "training stream", read by host threads
  // (SimulatedCaptureDevice): how the probe's own tests run every program through this class
  // without a GPU. Any other value is an error naming the variable.
  static Result<std::shared_ptr<DeferredSteps>> FromSetting(std::string_view value);

  // Begins the capture of `buffers` in `place` (TensorCapture::Buffers) and returns its id (> 0),
  // or 0 when this cannot read them there (host memory for a CUDA device or the other way round,
  // another CUDA device than the first list's): the caller digests them now. `keep`: the tensors those bytes belong to, alive until they land.
  Result<int64_t> Begin(const BufferPlace& place, const std::vector<CaptureBuffer>& buffers,
                        std::vector<torch::Tensor> keep);

  // The record of step `step`, made by `assemble` from `parts` and `watched` (null when none) once
  // every part's digests and norms are set, and written after every step added before it.
  using Assemble = std::function<StepRecord(const std::vector<Captured>& parts, const Captured* watched)>;
  using Write = std::function<Status(const StepRecord&)>;
  void Add(int64_t step, std::vector<Captured> parts, std::optional<Captured> watched, Assemble assemble);

  // Writes the steps added whose parts have all landed, in order, stopping at the first that has
  // not; with `wait`, waits for the device until every one is written (the program's end). A
  // device error fails this call and every later one.
  Status Flush(bool wait, const Write& write);

  // The steps added and not written, in order: what a process that dies now leaves unrecorded.
  std::vector<int64_t> StepsInFlight() const;

  // A list that could have been deferred was digested at once (CaptureList): counted, so that the
  // trace says how much of the capture was deferred (Summary).
  void NoteDigestedAtOnce();
  // "<n> lists deferred, <m> digested at once": the trace's last word on the deferred capture.
  std::string Summary() const;

 private:
  struct Step {
    int64_t step = 0;
    std::vector<Captured> parts;
    std::optional<Captured> watched;
    Assemble assemble;
  };

  // Moves what landed out of the pipeline into landed_ (every capture with `wait`).
  Status Collect(bool wait);
  // Sets `c`'s digests and norms when its capture has landed; false while it has not.
  bool Fill(Captured& c);
  // Forgets the results of captures begun before the last Add that no step waiting holds: those of
  // the steps written, and of a list captured and then not written.
  void DropUnclaimed();

  mutable std::mutex mu_;
  std::unique_ptr<CaptureDevice> device_;  // null until the first CUDA capture ("1": made there)
  BufferPlace place_;
  const int max_in_flight_;
  std::unique_ptr<CapturePipeline> pipeline_;
  int64_t last_id_ = 0;
  int64_t added_through_ = 0;  // the last capture begun before the last Add
  int64_t at_once_ = 0;        // NoteDigestedAtOnce's count
  std::map<int64_t, std::vector<torch::Tensor>> kept_;  // by capture id, until it lands
  std::map<int64_t, CapturedStep> landed_;              // by capture id, until its step is written
  std::vector<CapturedStep> polled_;                    // scratch
  std::deque<Step> steps_;
};

}  // namespace lockstep::probe
