#include "harness/capture/capture_pipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "harness/trace/digest.h"

namespace lockstep {

CapturePipeline::CapturePipeline(CaptureDevice* device, int max_in_flight)
    : device_(device), slot_free_(static_cast<size_t>(std::max(1, max_in_flight)), true) {}

Status CapturePipeline::Begin(int64_t step, const std::vector<CaptureBuffer>& buffers) {
  LOCKSTEP_RETURN_IF_ERROR(failed_);
  if (step <= last_step_) {
    return InvalidArgumentError("capture of step " + std::to_string(step) + " begun after step " +
                                std::to_string(last_step_));
  }
  // A full depth: the oldest capture is waited for and completed into `landed_early_`, whose
  // results Poll hands out first, so nothing is lost and the order is kept.
  if (pending_.size() >= slot_free_.size()) {
    ++host_waits_;
    Status waited = device_->WaitLanded(pending_.front().slot);
    if (!waited.ok()) {
      failed_ = waited.WithContext("waiting for the capture of step " + std::to_string(pending_.front().step));
      return failed_;
    }
    LOCKSTEP_RETURN_IF_ERROR(Complete(landed_early_));
  }
  const auto free_slot = std::find(slot_free_.begin(), slot_free_.end(), true);
  const int slot = static_cast<int>(free_slot - slot_free_.begin());
  Pending p;
  p.step = step;
  p.slot = slot;
  p.chunk_counts.reserve(buffers.size());
  for (const CaptureBuffer& b : buffers) {
    p.chunk_counts.push_back(DigestChunkCount(b.nbytes));
    p.seeds.push_back(b.seed);
    p.summed.push_back(b.squares != SquaredAs::kNone);
  }
  Status queued = device_->Queue(slot, buffers);
  if (!queued.ok()) {
    failed_ = queued.WithContext("queuing the capture of step " + std::to_string(step));
    return failed_;
  }
  *free_slot = false;
  last_step_ = step;
  pending_.push_back(std::move(p));
  return Status::Ok();
}

Status CapturePipeline::GuardOverwrite() {
  LOCKSTEP_RETURN_IF_ERROR(failed_);
  for (Pending& p : pending_) {
    if (p.guarded) continue;
    Status waits = device_->TrainingWaitsForReads(p.slot);
    if (!waits.ok()) {
      failed_ = waits.WithContext("ordering the training stream after the capture of step " + std::to_string(p.step));
      return failed_;
    }
    p.guarded = true;
  }
  return Status::Ok();
}

Status CapturePipeline::Complete(std::vector<CapturedStep>& out) {
  Pending& p = pending_.front();
  Status read = device_->ReadResults(p.slot, chunk_digests_, chunk_square_sums_);
  size_t chunks = 0;
  for (size_t count : p.chunk_counts) chunks += count;
  if (read.ok() && (chunk_digests_.size() != chunks || chunk_square_sums_.size() != chunks)) {
    read = InternalError("the device returned " + std::to_string(chunk_digests_.size()) + " chunk digests and " +
                         std::to_string(chunk_square_sums_.size()) + " square sums for " + std::to_string(chunks) +
                         " chunks");
  }
  if (!read.ok()) {
    failed_ = read.WithContext("reading the capture of step " + std::to_string(p.step));
    return failed_;
  }
  CapturedStep done;
  done.step = p.step;
  done.digests.reserve(p.chunk_counts.size());
  done.norms.reserve(p.chunk_counts.size());
  size_t at = 0;
  for (size_t i = 0; i < p.chunk_counts.size(); ++i) {
    const size_t count = p.chunk_counts[i];
    done.digests.push_back(CombineChunkDigestsWithSeed(chunk_digests_.data() + at, count, p.seeds[i]));
    if (p.summed[i]) {
      // The chunks' sums in order, from 0, as TensorL2Norm and MultiTensorDigest add them.
      double sum = 0.0;
      for (size_t c = 0; c < count; ++c) sum += chunk_square_sums_[at + c];
      done.norms.push_back(std::sqrt(sum));
    } else {
      done.norms.push_back(std::numeric_limits<double>::quiet_NaN());
    }
    at += count;
  }
  out.push_back(std::move(done));
  slot_free_[static_cast<size_t>(p.slot)] = true;
  pending_.pop_front();
  return Status::Ok();
}

Status CapturePipeline::Poll(std::vector<CapturedStep>& out) {
  // What Begin completed while waiting comes first: those steps are older than any still pending.
  for (CapturedStep& s : landed_early_) out.push_back(std::move(s));
  landed_early_.clear();
  LOCKSTEP_RETURN_IF_ERROR(failed_);
  while (!pending_.empty()) {
    Result<bool> landed = device_->Landed(pending_.front().slot);
    if (!landed.ok()) {
      failed_ = landed.status().WithContext("the capture of step " + std::to_string(pending_.front().step));
      return failed_;
    }
    if (!*landed) break;  // in step order: a later step waits for this one
    LOCKSTEP_RETURN_IF_ERROR(Complete(out));
  }
  return Status::Ok();
}

Status CapturePipeline::Drain(std::vector<CapturedStep>& out) {
  for (CapturedStep& s : landed_early_) out.push_back(std::move(s));
  landed_early_.clear();
  LOCKSTEP_RETURN_IF_ERROR(failed_);
  while (!pending_.empty()) {
    Status waited = device_->WaitLanded(pending_.front().slot);
    if (!waited.ok()) {
      failed_ = waited.WithContext("waiting for the capture of step " + std::to_string(pending_.front().step));
      return failed_;
    }
    LOCKSTEP_RETURN_IF_ERROR(Complete(out));
  }
  return Status::Ok();
}

std::vector<int64_t> CapturePipeline::InFlight() const {
  std::vector<int64_t> steps;
  for (const CapturedStep& s : landed_early_) steps.push_back(s.step);
  for (const Pending& p : pending_) steps.push_back(p.step);
  return steps;
}

}  // namespace lockstep
