#include "harness/rank/step_recorder.h"

#include <chrono>
#include <limits>

#include "harness/trace/digest.h"
#include "harness/trace/tensor_digest.h"

namespace lockstep {
namespace {

const auto kStart = std::chrono::steady_clock::now();

}  // namespace

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count();
}

Digest128 StepDigest(const StepRecord& record) {
  std::vector<Digest128> parts;
  for (const auto& t : record.tensors) {
    if (t.replicated) parts.push_back(t.digest);
  }
  return CombineChunkDigests(parts, "lockstep.step");
}

StepRecorder::StepRecorder(TraceWriter* writer) : writer_(writer) {}

Result<StepRecord> StepRecorder::Capture(Trainer& trainer, int64_t step, const StepStats* stats, double wall_s) {
  StepRecord record;
  record.step = step;
  record.loss = stats ? stats->loss : std::numeric_limits<double>::quiet_NaN();
  record.grad_norm = stats ? stats->grad_norm : std::numeric_limits<double>::quiet_NaN();
  record.lr = stats ? stats->lr : 0.0;
  record.wall_s = wall_s;
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    Result<TensorRecord> r = MakeTensorRecord(name, kind, t, replicated);
    if (r.ok()) {
      record.tensors.push_back(std::move(r).value());
    } else if (error.ok()) {
      error = r.status().WithContext("digesting step " + std::to_string(step));
    }
  });
  if (!error.ok()) return error;
  return record;
}

Status StepRecorder::Write(const StepRecord& record) { return writer_->WriteStep(record); }

void StepRecorder::OnCollectiveBegin(const CollectiveFingerprint& fp) {
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
  Status s = writer_->WriteCollectiveEnd(fp.group, fp.seq, WallSeconds());
  if (status_.ok() && !s.ok()) status_ = s;
}

}  // namespace lockstep
