#include "harness/rank/step_recorder.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <deque>
#include <limits>

#include "harness/capture/capture_pipeline.h"
#include "harness/capture/tensor_digest.h"
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
// allocator while the side stream still reads it).
struct StepRecorder::AsyncCapture {
  struct Begun {
    StepRecord record;
    std::vector<torch::Tensor> kept;
  };
  std::deque<Begun> begun;
  std::vector<torch::Tensor> tensors;  // the step's, in VisitState's order (scratch)
  std::unique_ptr<CaptureDevice> device;
  int cuda_device = -1;        // the CUDA device `device` captures on (-1: a test's host device)
  std::unique_ptr<CapturePipeline> pipeline;
  std::vector<CaptureBuffer> buffers;
  std::vector<CapturedStep> landed;
};

// Captures in flight at most: a host this many steps ahead of the device waits at Begin
// (CapturePipeline: a bound on the pinned memory and the tensors kept alive).
constexpr int kAsyncCaptureDepth = 3;

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
  AsyncCapture::Begun b;
  StepRecord& record = b.record;
  record.step = step;
  record.loss = stats ? stats->loss : std::numeric_limits<double>::quiet_NaN();
  record.loss_reported = true;
  record.grad_norm = stats ? stats->grad_norm : std::numeric_limits<double>::quiet_NaN();
  record.lr = stats ? stats->lr : 0.0;
  record.wall_s = wall_s;
  a.tensors.clear();
  a.buffers.clear();
  bool on_device = true;  // every tensor contiguous float32/float64 on one CUDA device
  int device = -1;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    TensorRecord& r = record.tensors.emplace_back();
    DescribeTensor(name, kind, t, replicated, nullptr, r);
    a.tensors.push_back(t);
    if (!on_device) return;
    const bool summed = t.defined() && SquaredAsOf(t.scalar_type()) != SquaredAs::kNone;
    const bool where = host_device ? t.is_cpu() : t.is_cuda();
    if (!summed || !where || !ValuesInPlace(t) || (!host_device && device >= 0 && t.get_device() != device)) {
      on_device = false;
      return;
    }
    device = host_device ? 0 : t.get_device();
    CaptureBuffer buffer;
    buffer.data = t.const_data_ptr();
    buffer.nbytes = static_cast<size_t>(t.numel()) * t.element_size();
    buffer.seed = DescriptorSeed(DigestDescriptor(r.dtype, t.sizes().data(), t.sizes().size(), buffer.nbytes));
    buffer.squares = SquaredAsOf(t.scalar_type());
    a.buffers.push_back(buffer);
  });
  if (on_device && device >= 0 && !host_device && a.device && a.cuda_device != device) on_device = false;
#if !LOCKSTEP_HAVE_CUDA_CAPTURE
  if (!host_device) return UnavailableError("asynchronous capture: " + AsyncCaptureUnavailable());
#endif
  if (!on_device || device < 0) {
    // The synchronous path for this step, after the steps in flight, so the records stay in order.
    LOCKSTEP_RETURN_IF_ERROR(FinishAsync(/*wait=*/true));
    StepRecord sync;
    LOCKSTEP_RETURN_IF_ERROR(Capture(trainer, step, stats, wall_s, sync));
    LOCKSTEP_RETURN_IF_ERROR(Write(sync));
    last_async_step_written_ = step;
    return Status::Ok();
  }
#if LOCKSTEP_HAVE_CUDA_CAPTURE
  if (!a.device) {
    // LibTorch's default stream, where the trainer queues its work: the legacy default stream.
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<CudaCaptureDevice> cuda,
                              CudaCaptureDevice::Create(device, /*training_stream=*/nullptr));
    a.device = std::move(cuda);
    a.cuda_device = device;
    a.pipeline = std::make_unique<CapturePipeline>(a.device.get(), kAsyncCaptureDepth);
  }
#endif
  b.kept = a.tensors;
  LOCKSTEP_RETURN_IF_ERROR(a.pipeline->Begin(step, a.buffers).WithContext("capturing step " + std::to_string(step)));
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
    a.begun.pop_front();  // and its tensors with it
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
  record.step = step;
  record.loss = stats ? stats->loss : std::numeric_limits<double>::quiet_NaN();
  record.loss_reported = true;
  record.grad_norm = stats ? stats->grad_norm : std::numeric_limits<double>::quiet_NaN();
  record.lr = stats ? stats->lr : 0.0;
  record.wall_s = wall_s;
  // The records kept from the last step are reused (issue 38): names, kinds and dtypes tensor by
  // tensor, then the bytes of all tensors in one pass (harness/capture/tensor_capture.h).
  capture_.Begin(record);  // and its layout_id, which spares the writer its comparison
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (error.ok()) error = capture_.Add(name, kind, t, replicated);
  });
  if (error.ok()) error = capture_.Finish();
  if (!error.ok()) return error.WithContext("digesting step " + std::to_string(step));
  return Status::Ok();
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
