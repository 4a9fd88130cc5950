#include "probe/deferred_steps.h"

#include <iterator>
#include <set>
#include <utility>

#include "harness/capture/async_capture_setting.h"
#include "harness/capture/simulated_capture_device.h"
#if LOCKSTEP_HAVE_CUDA_CAPTURE
#include "harness/capture/cuda/cuda_capture_device.h"
#endif

namespace lockstep::probe {
namespace {

// Captures in flight at most: about two steps of a program that captures its parameters,
// gradients, optimizer state and buffers apart (four lists a step).
constexpr int kMaxInFlight = 8;

// A program on the host: its "training stream" is the host thread, which writes tensors without
// being queued anywhere, so it waits for a capture's reads on the host, at once. Only the record's
// assembly and writing are deferred, which is what the probe's own tests run through this class.
class HostTrainedDevice : public CaptureDevice {
 public:
  HostTrainedDevice() : device_(SimulatedCaptureOptions{}) {}
  Status Queue(int slot, const std::vector<CaptureBuffer>& buffers) override { return device_.Queue(slot, buffers); }
  Result<bool> Landed(int slot) override { return device_.Landed(slot); }
  Status WaitLanded(int slot) override { return device_.WaitLanded(slot); }
  // The reads are done once the slot has landed (the landing copy follows them).
  Status TrainingWaitsForReads(int slot) override { return device_.WaitLanded(slot); }
  Status ReadResults(int slot, std::vector<Digest128>& chunk_digests, std::vector<double>& chunk_square_sums) override {
    return device_.ReadResults(slot, chunk_digests, chunk_square_sums);
  }

 private:
  SimulatedCaptureDevice device_;
};

}  // namespace

DeferredSteps::DeferredSteps(std::unique_ptr<CaptureDevice> device, BufferPlace place, int max_in_flight)
    : device_(std::move(device)), place_(place), max_in_flight_(max_in_flight) {
  if (device_) pipeline_ = std::make_unique<CapturePipeline>(device_.get(), max_in_flight_);
}

DeferredSteps::~DeferredSteps() {
  // The pipeline refers to the device: it goes first. Captures still in flight are the caller's to
  // have flushed; the tensors they read are let go only after the device (and its streams) is.
  pipeline_.reset();
  device_.reset();
}

Result<std::shared_ptr<DeferredSteps>> DeferredSteps::FromSetting(std::string_view value) {
  LOCKSTEP_ASSIGN_OR_RETURN(const AsyncCapture asked, ParseAsyncCapture(value));
  switch (asked) {
    case AsyncCapture::kOff:
      return std::shared_ptr<DeferredSteps>();
    case AsyncCapture::kHost:
      return std::make_shared<DeferredSteps>(std::make_unique<HostTrainedDevice>(), BufferPlace{false, -1}, kMaxInFlight);
    case AsyncCapture::kCuda:
#if LOCKSTEP_HAVE_CUDA_CAPTURE
      // The device is made at the first capture of CUDA tensors, on their device.
      return std::make_shared<DeferredSteps>(nullptr, BufferPlace{true, -1}, kMaxInFlight);
#else
      return UnavailableError(std::string(kAsyncCaptureEnv) + "=1: this probe was built without CUDA");
#endif
  }
  return InternalError("unknown asynchronous capture setting");
}

Result<int64_t> DeferredSteps::Begin(const BufferPlace& place, const std::vector<CaptureBuffer>& buffers,
                                     std::vector<torch::Tensor> keep) {
  std::lock_guard<std::mutex> lock(mu_);
  if (place.cuda != place_.cuda) return int64_t{0};
  if (place_.device >= 0 && place.device != place_.device) return int64_t{0};  // one device's stream
  if (!device_) {
#if LOCKSTEP_HAVE_CUDA_CAPTURE
    LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<CudaCaptureDevice> cuda,
                              CudaCaptureDevice::Create(place.device, /*training_stream=*/nullptr));
    device_ = std::move(cuda);
    place_ = place;
    pipeline_ = std::make_unique<CapturePipeline>(device_.get(), max_in_flight_);
#else
    return int64_t{0};
#endif
  }
  const int64_t id = ++last_id_;
  LOCKSTEP_RETURN_IF_ERROR(pipeline_->Begin(id, buffers));
  kept_[id] = std::move(keep);
  // Whatever the program queues next may overwrite these bytes: it waits for the reads, on the
  // device.
  LOCKSTEP_RETURN_IF_ERROR(pipeline_->GuardOverwrite());
  return id;
}

void DeferredSteps::Add(int64_t step, std::vector<Captured> parts, std::optional<Captured> watched, Assemble assemble) {
  std::lock_guard<std::mutex> lock(mu_);
  steps_.push_back(Step{step, std::move(parts), std::move(watched), std::move(assemble)});
  // Every capture of this step or an earlier one was begun by now (the probe writes a step before
  // it captures anything of the next): one no step holds was let go of by the program's probe.
  added_through_ = last_id_;
}

Status DeferredSteps::Collect(bool wait) {
  if (!pipeline_) return Status::Ok();
  polled_.clear();
  const Status got = wait ? pipeline_->Drain(polled_) : pipeline_->Poll(polled_);
  for (CapturedStep& c : polled_) {
    kept_.erase(c.step);
    const int64_t id = c.step;
    landed_[id] = std::move(c);
  }
  return got;
}

bool DeferredSteps::Fill(Captured& c) {
  if (c.pending == 0) return true;
  const auto it = landed_.find(c.pending);
  if (it == landed_.end()) return false;
  const CapturedStep& r = it->second;
  for (size_t i = 0; i < c.records.size() && i < r.digests.size(); ++i) {
    c.records[i].digest = r.digests[i];
    c.records[i].norm = r.norms[i];
  }
  c.pending = 0;  // the results are let go of by DropUnclaimed, once no step holds their id
  return true;
}

Status DeferredSteps::Flush(bool wait, const Write& write) {
  std::lock_guard<std::mutex> lock(mu_);
  const Status collected = Collect(wait);
  // What landed is written even when a later capture failed.
  while (!steps_.empty()) {
    Step& s = steps_.front();
    bool complete = true;
    for (Captured& part : s.parts) complete = Fill(part) && complete;
    if (s.watched) complete = Fill(*s.watched) && complete;
    if (!complete) {
      if (wait && collected.ok()) {
        return InternalError("asynchronous capture: step " + std::to_string(s.step) +
                             " has a part that never landed");
      }
      break;
    }
    LOCKSTEP_RETURN_IF_ERROR(write(s.assemble(s.parts, s.watched ? &*s.watched : nullptr)));
    steps_.pop_front();
  }
  DropUnclaimed();
  return collected;
}

void DeferredSteps::DropUnclaimed() {
  std::set<int64_t> claimed;
  for (const Step& s : steps_) {
    for (const Captured& part : s.parts) claimed.insert(part.pending);
    if (s.watched) claimed.insert(s.watched->pending);
  }
  for (auto it = landed_.begin(); it != landed_.end() && it->first <= added_through_;) {
    it = claimed.count(it->first) ? std::next(it) : landed_.erase(it);
  }
}

void DeferredSteps::NoteDigestedAtOnce() {
  std::lock_guard<std::mutex> lock(mu_);
  ++at_once_;
}

std::string DeferredSteps::Summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::to_string(last_id_) + " lists deferred, " + std::to_string(at_once_) + " digested at once";
}

std::vector<int64_t> DeferredSteps::StepsInFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> steps;
  for (const Step& s : steps_) steps.push_back(s.step);
  return steps;
}

}  // namespace lockstep::probe
