// The digests and L2 norms of a list of tensors in one pass (issue 38): what StepRecorder::Capture
// records for a step, bit for bit what DigestTensor and TensorL2Norm give for each tensor
// (MakeTensorRecord's fields), at the cost of one read of the bytes plus a few tens of
// nanoseconds a tensor.
//
// Where today's per-tensor path pays its fixed costs on every tensor of every step, the list
// splits them off: Add() does the per-tensor bookkeeping (what kind of bytes, where they are, the
// digest's descriptor seed, kept from the last step when the slot's dtype and shape are the same)
// and Run() is one loop over plain (pointer, bytes, kind, seed) entries that hashes and sums each
// chunk while it is in cache, with no LibTorch call, allocation or virtual call inside.
//
// Tensors that cannot be read where they are (views, lazy conjugate/negative bits, other devices)
// are made contiguous on the host in Add(), as DigestTensor does; their norms, and the norms of
// dtypes the definition does not sum (SquaredAsOf: complex, float8), come from TensorL2Norm in Add(), so that they are the same
// bits as the per-tensor path's (LibTorch's own reduction there).
//
// CUDA tensors, where the build has the CUDA digest (harness/capture/cuda), stay on the device: Run()
// digests all of them in one kernel launch per device and sums the squares of all those the
// definition sums in one more (DigestDeviceChunks), and reads everything back with one copy per
// device, instead of a launch, a copy and a synchronization per tensor and per norm. The norms of
// other dtypes are queued in Add() (LibTorch's reduction, as TensorL2Norm) and read with one copy.
// Same bits as DigestTensor/TensorL2Norm.
#pragma once

#include <c10/util/SmallVector.h>
#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/capture/capture_device.h"
#include "harness/core/status.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Where every buffer of a list is, when all are in one place a CaptureDevice can read: host memory
// (device -1: a SimulatedCaptureDevice's), or CUDA device `device`.
struct BufferPlace {
  bool cuda = false;
  int device = -1;
  bool operator==(const BufferPlace& o) const { return cuda == o.cuda && device == o.device; }
};

class MultiTensorDigest {
 public:
  // Starts a new list. Every buffer keeps its capacity and the descriptor seeds stay cached per
  // position, so a step that adds the same tensors as the last allocates nothing.
  void Clear();

  // Appends `tensor` (any dtype, device, layout; undefined too) at position size(). It is read in
  // Run(): it must stay alive and unchanged until then. Throws c10::Error only where LibTorch does
  // (a failing device copy), as DigestTensor and TensorL2Norm do.
  void Add(const torch::Tensor& tensor);

  // Digests and norms every tensor added since Clear(), and stores each tensor's digest and norm
  // into records[i] too where `records` is given (size() of them). Fails only on a CUDA error
  // (device tensors).
  Status Run(TensorRecord* records = nullptr);

  // The list as a CaptureDevice's buffers (capture_pipeline.h), instead of Run(): when every tensor
  // added is read where it is and summed by the definition (no copy was made, its norm is summed
  // with its digest) and all are in one place, fills `buffers` (Add's order) and returns
  // that place;
  // otherwise nullopt, and only Run() can digest the list. The same digests and norms either way.
  std::optional<BufferPlace> AsBuffers(std::vector<CaptureBuffer>& buffers) const;

  // Whether Run() may digest the list again with no Add(): every tensor added is undefined, or is
  // read where it lies with its norm summed in Run() (no copy was made and no norm computed in
  // Add(), which would hold the values of when it was added). Its tensors must then still be where
  // and what they were (the same storage, shape and dtype); their values may have changed.
  bool Repeatable() const { return repeatable_; }
  // The storages of the tensors read where they lie, kept until the next Clear().
  const std::vector<c10::Storage>& storages() const { return storages_; }

  // Whether position i of this list and of `other` are read alike: the same bytes (where, how
  // many, which device), the same descriptor seed and kind of squares, or the same digest and norm
  // set in Add(). Both lists need not have run.
  bool SameEntry(size_t i, const MultiTensorDigest& other) const;

  size_t size() const { return entries_.size(); }
  // Valid after Run(): equal to DigestTensor(tensor) and TensorL2Norm(tensor) of the i-th tensor.
  const Digest128& digest(size_t i) const { return entries_[i].digest; }
  double norm(size_t i) const { return entries_[i].norm; }

 private:
  // Where Run() reads an entry's bytes.
  enum class Where : uint8_t {
    kHost,    // hashed in Run's host loop
    kDone,    // digest and norm set in Add (an undefined tensor, or another device's)
    kDevice,  // a CUDA tensor: digest and norm in Run's device batch
  };

  struct Entry {
    const unsigned char* data = nullptr;
    size_t nbytes = 0;
    uint64_t seed = 0;  // DescriptorSeed of the tensor's dtype, shape and byte count
    Where where = Where::kDone;
    // values the definition sums (SquaredAsOf): the squares are summed where the bytes are hashed (sum_of_squares.h);
    // kNone: the norm is set in Add, or queued on the device (device_norm).
    SquaredAs squares = SquaredAs::kNone;
    Digest128 digest;
    double norm = 0.0;
    int64_t device_norm = -1;  // kDevice: its norm's index in device_norms_ (-1: none)
    int device = -1;           // kDevice: the CUDA device's index
    bool copied = false;       // read from a contiguous copy (copies_), not where the tensor is
  };

  // The descriptor seed of position i, recomputed only when its dtype or shape changed.
  struct SeedCache {
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    // Inline up to 5 dimensions, as TensorImpl keeps them: the cache is compared at every tensor of
    // every step, and a heap block of its own was one more cold line each after a training step.
    c10::SmallVector<int64_t, 5> sizes;
    uint64_t seed = 0;
    bool valid = false;
  };

  uint64_t SeedFor(size_t i, c10::ScalarType dtype, c10::IntArrayRef sizes, size_t nbytes);

  std::vector<Entry> entries_;
  bool repeatable_ = true;  // Repeatable()
  std::vector<SeedCache> seeds_;
  std::vector<torch::Tensor> copies_;  // host-contiguous copies of the tensors not readable in place
  // The storage of every tensor read in place: a list digested again (Repeatable) never reads freed
  // memory, even where its caller's word that the tensors are the same was wrong.
  std::vector<c10::Storage> storages_;
  std::vector<Digest128> chunks_;     // the chunk digests of a tensor over 1 MiB
  std::string descriptor_;
  std::vector<torch::Tensor> device_norms_;  // kDevice entries' norms, queued on the device (other dtypes)
  std::vector<double> square_sums_;          // the device batch's chunk sums of squares

  Status RunOnDevice();
};

}  // namespace lockstep
