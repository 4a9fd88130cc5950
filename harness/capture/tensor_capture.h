// The records of a list of tensors: names, kinds, dtypes and element counts tensor by tensor, then
// every byte digested and summed in one pass (MultiTensorDigest). What lockstep-rank records for a
// step (StepRecorder::Capture) and what the probe records for a kind of tensor (probe_module.cc):
// one place decides how a tensor becomes a TensorRecord, so both write the same fields the same way
// (MakeTensorRecord, the per-tensor definition, is what the tests hold it to).
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "harness/capture/multi_tensor_digest.h"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Writes into `r` what a record says of `tensor` besides its digest and norm: name, kind, element
// count, dtype ("undefined" for an undefined tensor), replicated and group. Every capture path
// fills records with it (TensorCapture, and lockstep-rank's asynchronous capture, whose digests
// land later).
void DescribeTensor(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
                    std::shared_ptr<const ReplicaGroup> group, TensorRecord& r);

class TensorCapture {
 public:
  // Starts a list whose records are written into `records`, reusing what it holds (the names'
  // storage, the digests' buffers and descriptor seeds of the last list at the same positions):
  // a step that captures the tensors of the last allocates nothing.
  void Begin(std::vector<TensorRecord>& records);
  // The same into `record.tensors`, and Finish() sets `record.layout_id` (StepRecord): the id the
  // last Finish() gave when this list describes the same tensors as the last one and `record`
  // held that id (any record: a copy, or one filled a few lists ago, holds what its id says);
  // otherwise an id no capture of this process gave before. So the trace writer need not compare
  // every name of every step with its last `tensors` record. The id is 0 from Begin() until the
  // list ends.
  void Begin(StepRecord& record);

  // Appends the record of `tensor` (any dtype, device, layout; undefined too). The tensor is read
  // in Finish(): it must stay alive and unchanged until then. `group`: the ranks it is compared
  // across when replicated, null for the whole world. Fails only where LibTorch throws (a failing
  // device copy), naming the tensor.
  Status Add(std::string_view name, TensorKind kind, const torch::Tensor& tensor, bool replicated,
             std::shared_ptr<const ReplicaGroup> group = nullptr);

  // Digests and norms every tensor added since Begin(); the records then hold exactly those
  // tensors, in order. Fails only on a CUDA error (device tensors).
  Status Finish();

  // Whether Repeat(record) can take the last list again into `record`: the last list was begun on
  // `record` and ended with a Finish() that succeeded, and MultiTensorDigest::Repeatable().
  bool CanRepeat(const StepRecord& record) const;
  // Instead of Begin(record), Add() of each tensor and Finish(): digests and norms the last list's
  // tensors again into `record`, which keeps its descriptions and layout id. The caller vouches
  // that they are the same tensors, with the same storage, shape and dtype (Trainer::StateEpoch);
  // only their values may have changed. No per-tensor bookkeeping: the one pass over the bytes.
  // Requires CanRepeat(record). Fails only on a CUDA error, leaving no layout id.
  Status Repeat(StepRecord& record);

  // For a device that digests the list later: whether `record` already describes the last list's
  // tensors (it holds that list's layout id: it was filled by it, or by a list of the same layout
  // ids vouch for) and the list can be read again where it lies (MultiTensorDigest::Repeatable).
  // The caller then hands the device the last list's buffers again, under the same word as
  // Repeat(), and sets the record's digests and norms from the device's results.
  bool CanRepeatLater(const StepRecord& record) const;
  // The storages of the last list's tensors read where they lie: what a capture in flight keeps
  // alive after the list is replaced.
  const std::vector<c10::Storage>& storages() const { return digests_.storages(); }

  // The first position where this capture's last list, described by `mine` (a record that holds
  // its layout id), and `other`'s last list, described by `theirs`, differ: in a record's
  // description (name, kind, element count, dtype, replication, group), or in where and how its
  // tensor is read (MultiTensorDigest::SameEntry); the shorter list's size when one is longer;
  // nullopt when they are the same list. Values are not compared: a list ended by FinishLater()
  // will do. What checks a repeat's word (StepRecorder).
  std::optional<size_t> FirstDifference(const StepRecord& mine, const TensorCapture& other,
                                        const StepRecord& theirs) const;

  // Instead of Finish(), for a device that digests the list later (capture_pipeline.h): the list's
  // buffers and their place when a CaptureDevice can read them all where they are
  // (MultiTensorDigest::AsBuffers), else nullopt. Changes nothing: Finish() or FinishLater() follows.
  std::optional<BufferPlace> Buffers(std::vector<CaptureBuffer>& buffers) const { return digests_.AsBuffers(buffers); }
  // Ends the list as Finish() does, without its digests and norms: the records hold the tensors'
  // descriptions, and the caller sets each record's digest and norm from the device's results
  // (CapturedStep's, in the buffers' order).
  void FinishLater();

 private:
  void Close();  // the records' count and the layout id, as the list ended

  MultiTensorDigest digests_;
  std::vector<TensorRecord>* records_ = nullptr;
  size_t size_ = 0;
  // Whether every record so far already said what Add() would write into it, in records that the
  // last Finish() left: the layout is the last list's so far.
  bool same_layout_ = false;
  StepRecord* step_ = nullptr;  // Begin(StepRecord&)'s record, whose layout_id Finish() sets
  bool finished_ = false;       // the last list ended (Finish() that succeeded, or FinishLater())
  bool digested_ = false;       // by a Finish() that succeeded
  uint64_t layout_id_ = 0;      // the last id Finish() gave
};

}  // namespace lockstep
