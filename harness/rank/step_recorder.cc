#include "harness/rank/step_recorder.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <deque>
#include <limits>
#include <optional>

#include "harness/capture/capture_pipeline.h"
#include "harness/trace/digest.h"
#if LOCKSTEP_HAVE_CUDA_CAPTURE
#include "harness/capture/cuda/cuda_capture_device.h"
#include "harness/capture/cuda/cuda_digest.h"
#endif

namespace lockstep {
namespace {

const auto kStart = std::chrono::steady_clock::now();

}  // namespace

double WallSeconds() {
  // Whole microseconds, which the trace writes without the shortest-form search (double_text.h).
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - kStart);
  return static_cast<double>(us.count()) / 1e6;
}

Digest128 StepDigest(const StepRecord& record) {
  std::vector<Digest128> parts;
  for (const auto& t : record.tensors) {
    if (t.replicated) parts.push_back(t.digest);
  }
  return CombineChunkDigests(parts, "lockstep.step");
}

// The asynchronous capture's state: the records begun, each with its tensors kept alive until its
// results land (a tensor freed meanwhile, a gradient set to None, would hand its memory to the
// allocator while the side stream still reads it), and the records written, kept for the next
// steps: a record reused keeps its names' storage, so a step allocates nothing per tensor, and its
// layout id (TensorCapture::Begin), so the writer need not compare the layout.
struct StepRecorder::AsyncCapture {
  struct Begun {
    StepRecord record;
    std::vector<torch::Tensor> kept;
    std::vector<c10::Storage> storages;  // a repeated list's (TensorCapture::storages)
  };
  std::deque<Begun> begun;
  std::vector<Begun> spare;  // written, their tensors released
  std::unique_ptr<CaptureDevice> device;
  int cuda_device = -1;        // the CUDA device `device` captures on (-1: a test's host device)
  std::unique_ptr<CapturePipeline> pipeline;
  std::vector<CaptureBuffer> buffers;
  // The trainer's StateEpoch() when `buffers` were listed and handed to the device (0: the last
  // list was not): while it stays, a step hands them again (StepRecorder::Capture's word).
  uint64_t listed_epoch = 0;
  // That list's descriptions and layout id, copied into a record of another layout (a new one, or
  // one a list of an earlier layout filled) that a repeat takes: the records cycle through the
  // queues, and without the copy each would be listed again, each listing giving a new layout id
  // that the others no longer hold.
  StepRecord described;
  std::vector<CapturedStep> landed;
};

namespace {

// Captures in flight at most: a host this many steps ahead of the device waits at Begin
// (CapturePipeline: a bound on the pinned memory and the tensors kept alive).
constexpr int kAsyncCaptureDepth = 3;

// A step record's own fields; its tensors are the capture's.
void SetStepFields(int64_t step, const StepStats* stats, double wall_s, StepRecord& record) {
  record.step = step;
  record.loss = stats ? stats->loss : std::numeric_limits<double>::quiet_NaN();
  record.loss_reported = true;
  record.grad_norm = stats ? stats->grad_norm : std::numeric_limits<double>::quiet_NaN();
  record.lr = stats ? stats->lr : 0.0;
  record.wall_s = wall_s;
}

// `s`, naming the step where it failed. The text is built only then: this is on the step's path,
// and a string built for every step was a heap allocation each.
Status ForStep(const Status& s, const char* doing, int64_t step) {
  if (s.ok()) return s;
  return s.WithContext(std::string(doing) + " step " + std::to_string(step));
}

}  // namespace

StepRecorder::StepRecorder(TraceWriter* writer) : writer_(writer) {}

StepRecorder::~StepRecorder() = default;

std::string StepRecorder::AsyncCaptureUnavailable() {
#if LOCKSTEP_HAVE_CUDA_CAPTURE
  std::string why;
  if (!CudaDeviceAvailable(&why)) return why;
  return "";
#else
  return "this lockstep was built without CUDA";
#endif
}

void StepRecorder::UseCaptureDeviceForTesting(std::unique_ptr<CaptureDevice> device) {
  async_ = std::make_unique<AsyncCapture>();
  async_->device = std::move(device);
  async_->pipeline = std::make_unique<CapturePipeline>(async_->device.get(), kAsyncCaptureDepth);
}

Status StepRecorder::CaptureAsync(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s) {
  RECORD_USER_SCOPE("lockstep.capture");
  if (!async_) async_ = std::make_unique<AsyncCapture>();
  AsyncCapture& a = *async_;
  // A test's host device reads CPU tensors; the CUDA one, tensors of its device.
  const bool host_device = a.device != nullptr && a.cuda_device < 0;
#if !LOCKSTEP_HAVE_CUDA_CAPTURE
  if (!host_device) return UnavailableError("asynchronous capture: " + AsyncCaptureUnavailable());
#endif
  AsyncCapture::Begun b;
  if (!a.spare.empty()) {
    b = std::move(a.spare.back());
    a.spare.pop_back();
  }
  StepRecord& record = b.record;
  SetStepFields(step, stats, wall_s, record);
  const uint64_t epoch = trainer.StateEpoch();
  if (a.pipeline && epoch == a.listed_epoch && capture_.CanRepeatLater(a.described)) {
    // The trainer vouches that its state is the last list's tensors, as for Capture(); the
    // record, filled by a list of the same layout, describes them. Checked before the device reads.
    ++repeats_;
    if (repeats_ <= kRepeatsCheckedFirst || repeats_ % kRepeatCheckEvery == 0) {
      Status checked = CheckRepeat(trainer, step, a.described);
      if (!checked.ok()) {
        a.listed_epoch = 0;
        return checked;
      }
    }
    if (record.layout_id != a.described.layout_id) {
      record.tensors = a.described.tensors;
      record.layout_id = a.described.layout_id;
    }
    b.storages = capture_.storages();  // alive until it lands, whatever the next lists hold
    LOCKSTEP_RETURN_IF_ERROR(ForStep(a.pipeline->Begin(step, a.buffers), "capturing", step));
    a.begun.push_back(std::move(b));
    return FinishAsync(/*wait=*/false);
  }
  a.listed_epoch = 0;
  repeats_ = 0;
  // The synchronous capture's list (the same records, the same digest seeds): what the device can
  // read where it lies is decided in one place (MultiTensorDigest::AsBuffers), for this and the probe.
  capture_.Begin(record);
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (!error.ok()) return;
    error = capture_.Add(name, kind, t, replicated);
    b.kept.push_back(t);
  });
  if (!error.ok()) return ForStep(error, "digesting", step);
  const std::optional<BufferPlace> place = capture_.Buffers(a.buffers);
  bool deferred = place.has_value() && place->cuda != host_device;
  if (deferred && !host_device && a.device != nullptr && place->device != a.cuda_device) deferred = false;
  if (!deferred) {
    // The synchronous path for this step, after the steps in flight, so the records stay in order.
    LOCKSTEP_RETURN_IF_ERROR(FinishAsync(/*wait=*/true));
    LOCKSTEP_RETURN_IF_ERROR(ForStep(capture_.Finish(), "digesting", step));
    LOCKSTEP_RETURN_IF_ERROR(Write(record));
    last_async_step_written_ = step;
    b.kept.clear();
    a.spare.push_back(std::move(b));
    return Status::Ok();
  }
#if LOCKSTEP_HAVE_CUDA_CAPTURE
  if (!a.device) {
    // LibTorch's default stream, where the trainer queues its work: the legacy default stream.
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<CudaCaptureDevice> cuda,
                              CudaCaptureDevice::Create(place->device, /*training_stream=*/nullptr));
    a.device = std::move(cuda);
    a.cuda_device = place->device;
    a.pipeline = std::make_unique<CapturePipeline>(a.device.get(), kAsyncCaptureDepth);
  }
#endif
  LOCKSTEP_RETURN_IF_ERROR(ForStep(a.pipeline->Begin(step, a.buffers), "capturing", step));
  capture_.FinishLater();  // the record's layout id, before the record moves
  a.listed_epoch = epoch;
  if (a.described.layout_id != record.layout_id) {
    a.described.tensors = record.tensors;
    a.described.layout_id = record.layout_id;
  }
  a.begun.push_back(std::move(b));
  return FinishAsync(/*wait=*/false);
}

Status StepRecorder::GuardOverwrite() {
  if (async_ && async_->pipeline) return async_->pipeline->GuardOverwrite();
  return Status::Ok();
}

Status StepRecorder::FinishAsync(bool wait) {
  if (!async_ || !async_->pipeline) return Status::Ok();
  AsyncCapture& a = *async_;
  a.landed.clear();
  const Status got = wait ? a.pipeline->Drain(a.landed) : a.pipeline->Poll(a.landed);
  // What landed is written even when a later capture failed.
  for (const CapturedStep& c : a.landed) {
    if (a.begun.empty() || a.begun.front().record.step != c.step) {
      return InternalError("asynchronous capture: step " + std::to_string(c.step) + " landed out of order");
    }
    StepRecord& record = a.begun.front().record;
    for (size_t i = 0; i < record.tensors.size(); ++i) {
      record.tensors[i].digest = c.digests[i];
      record.tensors[i].norm = c.norms[i];
    }
    LOCKSTEP_RETURN_IF_ERROR(Write(record));
    last_async_step_written_ = c.step;
    a.begun.front().kept.clear();  // its tensors released
    a.begun.front().storages.clear();
    a.spare.push_back(std::move(a.begun.front()));
    a.begun.pop_front();
  }
  return got;
}

std::vector<int64_t> StepRecorder::CapturesInFlight() const {
  std::vector<int64_t> steps;
  if (async_) {
    for (const auto& b : async_->begun) steps.push_back(b.record.step);
  }
  return steps;
}

Status StepRecorder::Capture(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s,
                             StepRecord& record) {
  // A torch profile names lockstep's work by these ranges (ci/gpu-profile-breakdown.py); without
  // a profiler each costs a flag test.
  RECORD_USER_SCOPE("lockstep.capture");
  SetStepFields(step, stats, wall_s, record);
  const uint64_t epoch = trainer.StateEpoch();
  if (epoch == listed_epoch_ && capture_.CanRepeat(record)) {
    // The trainer vouches that its state is the tensors of the last list (issue 47): the one pass
    // over their bytes, and no per-tensor bookkeeping.
    LOCKSTEP_RETURN_IF_ERROR(ForStep(capture_.Repeat(record), "digesting", step));
    ++repeats_;
    if (repeats_ <= kRepeatsCheckedFirst || repeats_ % kRepeatCheckEvery == 0) {
      return CheckRepeat(trainer, step, record);
    }
    return Status::Ok();
  }
  listed_epoch_ = 0;
  repeats_ = 0;
  // The records kept from the last step are reused (issue 38): names, kinds and dtypes tensor by
  // tensor, then the bytes of all tensors in one pass (harness/capture/tensor_capture.h).
  capture_.Begin(record);  // and its layout_id, which spares the writer its comparison
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (error.ok()) error = capture_.Add(name, kind, t, replicated);
  });
  if (error.ok()) error = capture_.Finish();
  if (!error.ok()) return ForStep(error, "digesting", step);
  listed_epoch_ = epoch;
  return Status::Ok();
}

Status StepRecorder::CheckRepeat(Trainer& trainer, int64_t step, const StepRecord& record) {
  // The state listed anew, beside, without its digests: a trainer that replaced a tensor without a
  // new epoch would otherwise have its old storage digested, unseen (even with the same values).
  // That is lockstep's own fault: exit 3.
  check_capture_.Begin(check_record_);
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (error.ok()) error = check_capture_.Add(name, kind, t, replicated);
  });
  if (!error.ok()) return ForStep(error, "digesting", step);
  check_capture_.FinishLater();
  const std::optional<size_t> at = capture_.FirstDifference(record, check_capture_, check_record_);
  if (!at) return Status::Ok();
  listed_epoch_ = 0;  // the next step lists its state anew
  const std::vector<TensorRecord>& listed = check_record_.tensors;
  const std::string which = *at < listed.size() ? listed[*at].name : "a tensor no longer there";
  return InternalError("step " + std::to_string(step) + ": the trainer's state changed without a new state epoch (" +
                       which + ", position " + std::to_string(*at) +
                       "): the capture repeated a list that no longer describes it");
}

Status StepRecorder::Write(const StepRecord& record) {
  RECORD_USER_SCOPE("lockstep.write");
  return writer_->WriteStep(record);
}

void StepRecorder::OnCollectiveBegin(const CollectiveFingerprint& fp) {
  RECORD_USER_SCOPE("lockstep.collective_record");
  CollectiveRecord r;
  r.group = fp.group;
  r.seq = fp.seq;
  r.op = ToString(fp.op);
  r.dtype = fp.dtype;
  r.count = fp.count;
  r.root = fp.root;
  r.reduce = fp.reduce;
  r.step = step_;
  r.start_s = WallSeconds();
  Status s = writer_->WriteCollectiveBegin(r);
  if (status_.ok() && !s.ok()) status_ = s;
}

void StepRecorder::OnCollectiveEnd(const CollectiveFingerprint& fp, const Status& /*status*/) {
  RECORD_USER_SCOPE("lockstep.collective_record");
  Status s = writer_->WriteCollectiveEnd(fp.group, fp.seq, WallSeconds());
  if (status_.ok() && !s.ok()) status_ = s;
}

}  // namespace lockstep
