// The tensor digest (docs/TRACE.md#digest) of bytes that live on a CUDA device, computed there:
// level 1 (XXH3-128 of every 1 MiB chunk) runs as one thread block per chunk, and only the chunk
// digests (16 bytes per MiB) come back to the host, where level 2 combines them exactly as
// digest.cc does. The result is bit-identical to DigestBytes over the same bytes.
// Built only when CUDA is found (library lockstep_cuda_digest).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// `device_ptr` must point to `nbytes` bytes of device (or managed) memory, row-major; it may be
// null when nbytes is 0. The work is queued on `stream` (ordered after what is already queued
// there) and the call returns when the digest is known. CUDA errors come back as a Status.
Result<Digest128> DigestDeviceBuffer(const void* device_ptr, size_t nbytes, std::string_view dtype,
                                     const std::vector<int64_t>& shape, cudaStream_t stream);

// A buffer of device memory, for DigestDeviceChunks.
struct DeviceBuffer {
  const void* data = nullptr;  // may be null when nbytes is 0
  size_t nbytes = 0;
  // values the norm's definition sums (not kNone): DigestDeviceChunks also sums their squares, chunk by chunk, in the
  // norm's order (chunk_squares.cuh); `data` must then be aligned to the value's size.
  SquaredAs squares = SquaredAs::kNone;
  // The caller knows `data` is memory of the device named in the call (a CUDA tensor's, from
  // LibTorch): DigestDeviceChunks then skips its cudaPointerGetAttributes check, a driver call per
  // buffer per step on the capture's path. False: checked, and a host pointer is refused.
  bool known_device_memory = false;
};

// Level 1 of the digests of many buffers in one kernel launch (one thread block per chunk of every
// buffer), one copy of the task table to the device and one of the results back: what
// MultiTensorDigest uses for a step's CUDA tensors, instead of a launch, a copy and a
// synchronization per tensor. Returns the chunk digests, buffer after buffer, DigestChunkCount(nbytes)
// of them per buffer (one for an empty buffer), in chunk order: level 2 (CombineChunkDigests, or
// CombineChunkDigestsWithSeed with the buffer's descriptor seed) turns each buffer's run into its
// digest, bit-identical to DigestDeviceBuffer's. Every buffer must be on CUDA device `device`;
// the work runs there (the caller's current device is restored), queued on `stream` (a stream of
// that device; null: its legacy default stream). Returns when done.
// With `chunk_square_sums`, the buffers marked `squares` also have each chunk's sum of squares
// computed (one more launch, a thread block per chunk), as SumOfSquares of the chunk's values on the CPU,
// bit for bit: `chunk_square_sums` gets one entry per chunk, at the digests' positions (0 for the
// chunks of the other buffers). Adding a buffer's entries in order, from 0, gives the sum behind
// its L2 norm, as TensorL2Norm adds on the CPU.
Result<std::vector<Digest128>> DigestDeviceChunks(const std::vector<DeviceBuffer>& buffers, int device,
                                                  cudaStream_t stream,
                                                  std::vector<double>* chunk_square_sums = nullptr);

// Only the sums of squares of one buffer's chunks (`buffer.squares` must not be kNone),
// as DigestDeviceChunks computes them, without hashing: TensorL2Norm of a CUDA tensor. Empty for an
// empty buffer.
Result<std::vector<double>> SquareSumDeviceChunks(const DeviceBuffer& buffer, int device, cudaStream_t stream);

// Whether a CUDA device can be used from this process; `why` says why not when it cannot.
bool CudaDeviceAvailable(std::string* why);

}  // namespace lockstep
