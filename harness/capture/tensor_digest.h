// Digests and norms of LibTorch tensors for the trace (the definition is in digest.h). Kept apart
// from lockstep_trace so that readers of traces never link LibTorch.
#pragma once

#include <torch/types.h>

#include <string>

#include "harness/capture/dtype_name.h"
#include "harness/core/status.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
// "complex64", "complex128"; other types get c10's name, lower-cased.

// The digest of the tensor's values in row-major order, over a contiguous CPU copy when the
// tensor is not already one (views, transposes and device tensors digest like their contiguous
// CPU equal). CUDA tensors are hashed on the device when the build has the CUDA digest
// (harness/capture/cuda), with the same result. An undefined tensor digests as zero bytes of dtype
// "undefined". Throws c10::Error only where LibTorch does (a failing device copy) or the CUDA
// digest fails; MultiTensorDigest's callers convert that to a Status.
Digest128 DigestTensor(const torch::Tensor& tensor, int threads = 1);

// Whether the tensor's bytes can be read where they are: on the CPU, dense, contiguous, without a
// lazy conjugate/negative bit. The trainer's parameters, gradients and optimizer state all are,
// and reading them directly keeps the per-tensor cost of a step record to the hashing itself
// (each LibTorch op, even a no-op detach(), costs about a microsecond of dispatch; a step has
// hundreds of tensors; docs/PERFORMANCE.md). `tensor` must be defined (any device).
bool ReadableInPlace(const torch::Tensor& tensor);

// Whether the tensor's bytes are its values in row-major order, on whatever device: dense,
// contiguous, without a lazy conjugate/negative bit. ReadableInPlace is this on the CPU; a CUDA
// tensor that is hashed on the device as it is (MultiTensorDigest). `tensor` must be defined.
bool ValuesInPlace(const torch::Tensor& tensor);

// How the norm sums values of `dtype` (sum_of_squares.h): the floating-point dtypes float32, float64,
// float16 and bfloat16, the integers int64, int32, int16, int8 and uint8, and bool by the
// definition; every other dtype (complex, float8, the wider unsigned ones) kNone: LibTorch's
// reduction, L2NormTensor.
SquaredAs SquaredAsOf(c10::ScalarType dtype);

// L2 norm accumulated in float64 (0 for an undefined or empty tensor; NaN/inf propagate). Values
// of every dtype SquaredAsOf names are summed as SumOfSquares defines
// (sum_of_squares.h), chunk by chunk: for a contiguous CPU tensor in place, and for a CUDA tensor
// (any layout, made contiguous) on the device where the build has the CUDA digest, with the same
// bits as its contiguous CPU copy.
double TensorL2Norm(const torch::Tensor& tensor);

// TensorL2Norm's LibTorch path (every other tensor: other dtypes, CPU views) as
// a 0-d tensor on the tensor's device, not yet read: a caller reads the norms of many device
// tensors with one copy (MultiTensorDigest). `tensor` is defined and not empty.
torch::Tensor L2NormTensor(const torch::Tensor& tensor);

}  // namespace lockstep
