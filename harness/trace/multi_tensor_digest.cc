#include "harness/trace/multi_tensor_digest.h"

#include <algorithm>
#include <cmath>

#include "harness/trace/digest.h"
#include "harness/trace/dtype_name.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/tensor_digest.h"

namespace lockstep {

void MultiTensorDigest::Clear() {
  entries_.clear();
  copies_.clear();
}

uint64_t MultiTensorDigest::SeedFor(size_t i, c10::ScalarType dtype, c10::IntArrayRef sizes, size_t nbytes) {
  if (seeds_.size() <= i) seeds_.resize(i + 1);
  SeedCache& c = seeds_[i];
  // The byte count follows from dtype and shape, so these two decide the descriptor.
  if (c.valid && c.dtype == dtype && sizes.equals(c.sizes)) return c.seed;
  descriptor_.clear();
  AppendDigestDescriptor(DtypeName(dtype), sizes.data(), sizes.size(), nbytes, descriptor_);
  c.dtype = dtype;
  c.sizes.assign(sizes.begin(), sizes.end());
  c.seed = DescriptorSeed(descriptor_);
  c.valid = true;
  return c.seed;
}

void MultiTensorDigest::Add(const torch::Tensor& tensor) {
  const size_t i = entries_.size();
  Entry e;
  if (!tensor.defined() || !tensor.device().is_cpu()) {
    // Undefined, or on a device: the per-tensor path as it is (on CUDA, the device digest).
    e.norm_kind = Norm::kDone;
    e.digest = DigestTensor(tensor);
    e.norm = TensorL2Norm(tensor);
    entries_.push_back(e);
    return;
  }
  const torch::Tensor* t = &tensor;
  if (!ReadableInPlace(tensor)) {
    // A view or a lazily conjugated/negated tensor: its values, contiguous, as DigestTensor digests
    // them; the norm as TensorL2Norm computes it for such a tensor (LibTorch's reduction).
    copies_.push_back(tensor.detach().resolve_conj().resolve_neg().contiguous());
    t = &copies_.back();
    e.norm_kind = Norm::kKnown;
    e.norm = TensorL2Norm(tensor);
  } else if (tensor.scalar_type() == c10::ScalarType::Float) {
    e.norm_kind = Norm::kFloat32;
  } else if (tensor.scalar_type() == c10::ScalarType::Double) {
    e.norm_kind = Norm::kFloat64;
  } else {
    e.norm_kind = Norm::kKnown;
    e.norm = TensorL2Norm(tensor);
  }
  // const_data_ptr: a read, which must not materialize a copy-on-write storage.
  e.data = static_cast<const unsigned char*>(t->const_data_ptr());
  e.nbytes = static_cast<size_t>(t->numel()) * t->element_size();
  e.seed = SeedFor(i, t->scalar_type(), t->sizes(), e.nbytes);
  entries_.push_back(e);
}

namespace {

// The norm's part of one chunk, added in the order TensorL2Norm and MakeTensorRecord add.
inline double ChunkSumOfSquares(const unsigned char* p, size_t nbytes, bool float32) {
  return float32 ? SumOfSquares(reinterpret_cast<const float*>(p), nbytes / sizeof(float))
                 : SumOfSquares(reinterpret_cast<const double*>(p), nbytes / sizeof(double));
}

}  // namespace

void MultiTensorDigest::Run() {
  for (Entry& e : entries_) {
    if (e.norm_kind == Norm::kDone) continue;
    const bool summed = e.norm_kind == Norm::kFloat32 || e.norm_kind == Norm::kFloat64;
    const bool float32 = e.norm_kind == Norm::kFloat32;
    double sum = 0.0;
    if (e.nbytes <= kDigestChunkBytes) {
      // One chunk (most tensors of a step): hashed, then summed while it is in cache.
      const Digest128 chunk = DigestChunk(e.data, e.nbytes);
      if (summed) sum += ChunkSumOfSquares(e.data, e.nbytes, float32);
      e.digest = CombineChunkDigestsWithSeed(&chunk, 1, e.seed);
    } else {
      chunks_.clear();
      for (size_t begin = 0; begin < e.nbytes; begin += kDigestChunkBytes) {
        const size_t len = std::min(kDigestChunkBytes, e.nbytes - begin);
        chunks_.push_back(DigestChunk(e.data + begin, len));
        if (summed) sum += ChunkSumOfSquares(e.data + begin, len, float32);
      }
      e.digest = CombineChunkDigestsWithSeed(chunks_.data(), chunks_.size(), e.seed);
    }
    if (summed) e.norm = std::sqrt(sum);
  }
}

}  // namespace lockstep
