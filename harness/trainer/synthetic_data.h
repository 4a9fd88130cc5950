// Deterministic synthetic data: sample i depends only on (seed, i), and each step's global batch
// is split across ranks DistributedSampler-style, so a 1-rank run and an N-rank run train on the
// same samples and must agree within float tolerance.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "harness/scenario/scenario.h"
#include "harness/trainer/model.h"

namespace lockstep {

// The micro-batch of `rank` for optimizer step `step` (1-based) and micro-step `micro`
// (0-based, < grad_accum). The global batch of a micro-step is batch_per_rank * world_size
// samples starting at ((step - 1) * grad_accum + micro) * global_batch; rank r takes the r-th
// contiguous slice of batch_per_rank samples.
Batch MakeBatch(const ModelSpec& model, uint64_t seed, int batch_per_rank, int grad_accum,
                int64_t step, int micro, int rank, int world_size, torch::Device device);

}  // namespace lockstep
