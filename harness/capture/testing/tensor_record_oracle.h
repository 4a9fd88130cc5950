// The per-tensor definition of a TensorRecord, kept as the tests' oracle: name, kind, numel and dtype
// as given, digest and norm as DigestTensor and TensorL2Norm define them, or, for a float32/float64
// tensor readable in place, in one fused pass whose bits must be the same. What lockstep records
// goes through TensorCapture (tensor_capture.h); the tests hold it to this, tensor by tensor.
#pragma once

#include <torch/types.h>

#include <string>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

Result<TensorRecord> MakeTensorRecord(const std::string& name, TensorKind kind, const torch::Tensor& tensor,
                                      bool replicated = true, int threads = 1);

}  // namespace lockstep
