#include "harness/comm/recording_communicator.h"

#include <utility>

#include "harness/capture/dtype_name.h"

namespace lockstep {

RecordingCommunicator::RecordingCommunicator(std::unique_ptr<Communicator> inner, CollectiveListener* listener,
                                             CollectiveInterceptor* interceptor)
    : RecordingCommunicator(std::move(inner), listener, interceptor, std::make_shared<std::atomic<int64_t>>(0)) {}

RecordingCommunicator::RecordingCommunicator(std::unique_ptr<Communicator> inner, CollectiveListener* listener,
                                             CollectiveInterceptor* interceptor, std::shared_ptr<std::atomic<int64_t>> step)
    : inner_(std::move(inner)), listener_(listener), interceptor_(interceptor), step_(std::move(step)) {}

CollectiveFingerprint RecordingCommunicator::Fingerprint(CollectiveOp op, const torch::Tensor* tensor, int root,
                                                         const ReduceOp* reduce) {
  CollectiveFingerprint fp;
  fp.group = inner_->group_name();
  // Numbered even when the call later fails or is skipped: seq counts what this rank issued.
  fp.seq = next_seq_++;
  fp.op = op;
  if (tensor != nullptr && tensor->defined()) {
    fp.dtype = DtypeName(tensor->scalar_type());
    fp.count = tensor->numel();
  }
  fp.root = root;
  if (reduce != nullptr) fp.reduce = ToString(*reduce);
  return fp;
}

template <typename Call>
Status RecordingCommunicator::Record(const CollectiveFingerprint& fp, Call&& call) {
  // The hook runs before the begin record: a rank that a hang injection blocks here never
  // entered the collective, and its trace must say so.
  const bool run = interceptor_ == nullptr || interceptor_->BeforeCollective(fp, step());
  if (listener_ != nullptr) listener_->OnCollectiveBegin(fp);
  Status status = run ? call() : Status(StatusCode::kOk, kSkippedNote);
  if (listener_ != nullptr) listener_->OnCollectiveEnd(fp, status);
  // The note is for the record; the caller sees a plain ok, as the skipping rank's code would.
  return status.ok() ? Status::Ok() : status;
}

Status RecordingCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  return Record(Fingerprint(CollectiveOp::kAllReduce, &tensor, -1, &op),
                [&] { return inner_->AllReduce(tensor, op); });
}

Status RecordingCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  return Record(Fingerprint(CollectiveOp::kAllGather, &input, -1, nullptr),
                [&] { return inner_->AllGather(input, output); });
}

Status RecordingCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  return Record(Fingerprint(CollectiveOp::kReduceScatter, &input, -1, &op),
                [&] { return inner_->ReduceScatter(input, output, op); });
}

Status RecordingCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  return Record(Fingerprint(CollectiveOp::kBroadcast, &tensor, root, nullptr),
                [&] { return inner_->Broadcast(tensor, root); });
}

Status RecordingCommunicator::Barrier() {
  return Record(Fingerprint(CollectiveOp::kBarrier, nullptr, -1, nullptr), [&] { return inner_->Barrier(); });
}

Result<std::unique_ptr<Communicator>> RecordingCommunicator::Split(int color, int key, const std::string& name) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> child, inner_->Split(color, key, name));
  return std::unique_ptr<Communicator>(new RecordingCommunicator(std::move(child), listener_, interceptor_, step_));
}

}  // namespace lockstep
