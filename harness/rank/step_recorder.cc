#include "harness/rank/step_recorder.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <limits>

#include "harness/trace/digest.h"
#include "harness/trace/dtype_name.h"

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
  // First the bookkeeping, tensor by tensor (names, kinds, dtypes, into the records kept from the
  // last step), then the bytes, all tensors in one pass (issue 38).
  digests_.Clear();
  size_t n = 0;
  Status error;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (!error.ok()) return;
    try {
      digests_.Add(t);
    } catch (const c10::Error& e) {
      error = InternalError("digest of " + name + ": " + e.what_without_backtrace())
                  .WithContext("digesting step " + std::to_string(step));
      return;
    }
    if (n == record.tensors.size()) record.tensors.emplace_back();
    TensorRecord& r = record.tensors[n++];
    r.name.assign(name);
    r.kind = kind;
    r.numel = t.defined() ? t.numel() : 0;
    r.dtype = t.defined() ? DtypeName(t.scalar_type()) : "undefined";
    r.replicated = replicated;
    r.group.reset();
  });
  if (!error.ok()) return error;
  record.tensors.resize(n);
  LOCKSTEP_RETURN_IF_ERROR(digests_.Run().WithContext("digesting step " + std::to_string(step)));
  for (size_t i = 0; i < n; ++i) {
    record.tensors[i].digest = digests_.digest(i);
    record.tensors[i].norm = digests_.norm(i);
  }
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
