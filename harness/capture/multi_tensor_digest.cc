#include "harness/capture/multi_tensor_digest.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "harness/capture/dtype_name.h"
#include "harness/capture/tensor_digest.h"
#include "harness/trace/digest.h"
#include "harness/trace/one_chunk_digest.h"
#include "harness/trace/sum_of_squares.h"
#if LOCKSTEP_HAVE_CUDA_DIGEST
#include "harness/capture/cuda/cuda_digest.h"
#endif

namespace lockstep {

void MultiTensorDigest::Clear() {
  entries_.clear();
  repeatable_ = true;
  copies_.clear();
  storages_.clear();
  device_norms_.clear();
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
#if LOCKSTEP_HAVE_CUDA_DIGEST
  if (tensor.defined() && tensor.is_cuda()) {
    // Left on the device for Run's batch. As DigestTensor does, a view is made contiguous on the
    // device first (kept alive in copies_ until Run); a tensor that is contiguous already (every
    // tensor of a trainer's state) is read where it is, with no LibTorch op: each costs host time
    // per tensor per step. The norms of dtypes the definition does not sum (complex, float8) are
    // queued, as TensorL2Norm computes them, in float64 (a complex tensor's float32 norm widens
    // exactly).
    const bool in_place = ValuesInPlace(tensor);
    const torch::Tensor t = in_place ? tensor : tensor.detach().resolve_conj().resolve_neg().contiguous();
    e.where = Where::kDevice;
    e.device = t.get_device();
    e.data = static_cast<const unsigned char*>(t.const_data_ptr());
    e.nbytes = static_cast<size_t>(t.numel()) * t.element_size();
    e.seed = SeedFor(i, t.scalar_type(), t.sizes(), e.nbytes);
    e.squares = SquaredAsOf(t.scalar_type());  // summed in Run's batch, as TensorL2Norm sums it there
    if (e.squares == SquaredAs::kNone && t.numel() > 0) {
      device_norms_.push_back(L2NormTensor(tensor).to(torch::kDouble));
      e.device_norm = static_cast<int64_t>(device_norms_.size()) - 1;
    }
    if (!in_place) copies_.push_back(t);
    if (in_place) storages_.push_back(t.storage());
    e.copied = !in_place;
    if (e.copied || e.device_norm >= 0) repeatable_ = false;
    entries_.push_back(e);
    return;
  }
#endif
  if (!tensor.defined() || !tensor.device().is_cpu()) {
    // Undefined, or on a device: the per-tensor path as it is (on CUDA, the device digest).
    e.where = Where::kDone;
    e.digest = DigestTensor(tensor);
    e.norm = TensorL2Norm(tensor);
    if (tensor.defined()) repeatable_ = false;
    entries_.push_back(e);
    return;
  }
  const torch::Tensor* t = &tensor;
  if (!ReadableInPlace(tensor)) {
    // A view or a lazily conjugated/negated tensor: its values, contiguous, as DigestTensor digests
    // them; the norm as TensorL2Norm computes it for such a tensor (LibTorch's reduction).
    copies_.push_back(tensor.detach().resolve_conj().resolve_neg().contiguous());
    t = &copies_.back();
    e.norm = TensorL2Norm(tensor);
    e.copied = true;
  } else {
    e.squares = SquaredAsOf(tensor.scalar_type());  // summed in Run's pass, unless kNone
    if (e.squares == SquaredAs::kNone) e.norm = TensorL2Norm(tensor);
  }
  if (e.copied || e.squares == SquaredAs::kNone) repeatable_ = false;
  if (!e.copied) storages_.push_back(t->storage());
  e.where = Where::kHost;
  // const_data_ptr: a read, which must not materialize a copy-on-write storage.
  e.data = static_cast<const unsigned char*>(t->const_data_ptr());
  e.nbytes = static_cast<size_t>(t->numel()) * t->element_size();
  e.seed = SeedFor(i, t->scalar_type(), t->sizes(), e.nbytes);
  entries_.push_back(e);
}

bool MultiTensorDigest::SameEntry(size_t i, const MultiTensorDigest& other) const {
  const Entry& a = entries_[i];
  const Entry& b = other.entries_[i];
  if (a.where != b.where || a.copied != b.copied || a.data != b.data || a.nbytes != b.nbytes || a.seed != b.seed ||
      a.squares != b.squares || a.device != b.device || (a.device_norm < 0) != (b.device_norm < 0)) {
    return false;
  }
  return a.where != Where::kDone || (a.digest == b.digest && std::memcmp(&a.norm, &b.norm, sizeof(double)) == 0);
}

std::optional<BufferPlace> MultiTensorDigest::AsBuffers(std::vector<CaptureBuffer>& buffers) const {
  buffers.clear();
  if (entries_.empty()) return std::nullopt;
  const BufferPlace place{entries_.front().where == Where::kDevice, entries_.front().device};
  for (const Entry& e : entries_) {
    if (e.where == Where::kDone || e.copied || e.squares == SquaredAs::kNone) return std::nullopt;
    if (!(BufferPlace{e.where == Where::kDevice, e.device} == place)) return std::nullopt;
    buffers.push_back(CaptureBuffer{e.data, e.nbytes, e.seed, e.squares});
  }
  return place;
}

namespace {

// Every piece but a chunk's last one must hold whole rounds of the partial sums, so that each value
// still lands in the partial sum the definition gives it (sum_of_squares.h).
static_assert(kDigestPieceBytes % (kSumOfSquaresLanes * sizeof(double)) == 0, "pieces hold whole rounds of lanes");

// A chunk's partial sums and the kind of its values, for DigestChunkInPieces' callback.
struct PieceSquares {
  SquaredAs as;
  SquareLanes lanes;
};

void AddSquaresOfPiece(const unsigned char* piece, size_t nbytes, void* context) {
  auto* squares = static_cast<PieceSquares*>(context);
  AddSquaresOfBytes(squares->as, piece, nbytes, squares->lanes);
}

// One chunk's digest and, unless `as` is kNone, its part of the norm (the definition's per-chunk
// sum of squares, added in the order TensorL2Norm and MakeTensorRecord add): each 8 KiB piece is
// summed right after it is hashed, while it is in the first-level cache.
inline Digest128 DigestAndSumChunk(const unsigned char* p, size_t nbytes, SquaredAs as, double& sum) {
  if (as == SquaredAs::kNone) return DigestChunk(p, nbytes);
  PieceSquares squares{as, {}};
  const Digest128 d = DigestChunkInPieces(p, nbytes, &AddSquaresOfPiece, &squares);
  sum += Total(squares.lanes);
  return d;
}

}  // namespace

Status MultiTensorDigest::Run(TensorRecord* records) {
  bool elsewhere = false;  // entries not read in the host loop
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.where != Where::kHost) {
      elsewhere = true;
      continue;
    }
    double sum = 0.0;
    if (e.nbytes <= kDigestChunkBytes) {
      // One chunk (most tensors of a step).
      const Digest128 chunk = DigestAndSumChunk(e.data, e.nbytes, e.squares, sum);
      e.digest = CombineOneChunkDigest(chunk, e.seed);
    } else {
      chunks_.clear();
      for (size_t c = 0; c < DigestChunkCount(e.nbytes); ++c) {
        chunks_.push_back(
            DigestAndSumChunk(e.data + c * kDigestChunkBytes, DigestChunkLength(e.nbytes, c), e.squares, sum));
      }
      e.digest = CombineChunkDigestsWithSeed(chunks_.data(), chunks_.size(), e.seed);
    }
    if (e.squares != SquaredAs::kNone) e.norm = std::sqrt(sum);
    if (records != nullptr) {
      // Here, not in a loop of its own after the pass: each record is stored while the pass goes
      // on, instead of every record's line visited again afterwards (issue 47).
      records[i].digest = e.digest;
      records[i].norm = e.norm;
    }
  }
  if (!elsewhere) return Status::Ok();
  LOCKSTEP_RETURN_IF_ERROR(RunOnDevice());
  if (records != nullptr) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].where == Where::kHost) continue;
      records[i].digest = entries_[i].digest;
      records[i].norm = entries_[i].norm;
    }
  }
  return Status::Ok();
}

Status MultiTensorDigest::RunOnDevice() {
#if LOCKSTEP_HAVE_CUDA_DIGEST
  // One batch per device (a process may hold tensors on several: model or pipeline parallelism).
  std::vector<int> devices;
  for (const Entry& e : entries_) {
    if (e.where == Where::kDevice && std::find(devices.begin(), devices.end(), e.device) == devices.end()) {
      devices.push_back(e.device);
    }
  }
  std::vector<DeviceBuffer> buffers;
  std::vector<torch::Tensor> norms;
  for (const int device : devices) {
    buffers.clear();
    norms.clear();
    for (const Entry& e : entries_) {
      if (e.where != Where::kDevice || e.device != device) continue;
      buffers.push_back(
          DeviceBuffer{e.data, e.nbytes, e.squares, /*known_device_memory=*/true});
      if (e.device_norm >= 0) norms.push_back(device_norms_[static_cast<size_t>(e.device_norm)]);
    }
    // On the device's legacy default stream, as DigestTensor: after what the trainer queued there.
    Result<std::vector<Digest128>> chunks = DigestDeviceChunks(buffers, device, /*stream=*/nullptr, &square_sums_);
    LOCKSTEP_RETURN_IF_ERROR(chunks.status());
    torch::Tensor host;
    if (!norms.empty()) {
      try {
        // Every norm of the device in one copy (stack is exact: all are float64).
        host = torch::stack(norms).to(torch::kCPU).contiguous();
      } catch (const c10::Error& error) {
        return InternalError(std::string("norms of the CUDA tensors: ") + error.what_without_backtrace());
      }
    }
    size_t at = 0;
    size_t norm_at = 0;
    for (Entry& e : entries_) {
      if (e.where != Where::kDevice || e.device != device) continue;
      const size_t count = DigestChunkCount(e.nbytes);
      if (at + count > chunks->size()) return InternalError("CUDA digest: fewer chunk digests than chunks");
      e.digest = CombineChunkDigestsWithSeed(chunks->data() + at, count, e.seed);
      if (e.squares != SquaredAs::kNone) {
        // The chunks' sums in order, as TensorL2Norm adds them (an empty tensor's norm is 0).
        double sum = 0.0;
        for (size_t c = 0; c < count; ++c) sum += square_sums_[at + c];
        e.norm = std::sqrt(sum);
      }
      at += count;
      if (e.device_norm >= 0) e.norm = host.const_data_ptr<double>()[norm_at++];
    }
  }
#endif
  return Status::Ok();
}

}  // namespace lockstep
