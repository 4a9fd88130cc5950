// The digest's and the norm's kernels (digest_kernel.cu) queued on a stream over task tables that
// are already in device memory, returning without waiting for them: what an asynchronous capture
// (harness/capture/cuda) needs, where DigestDeviceChunks builds its tables, copies them in, and
// synchronizes before it returns. Same kernels, same bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/core/status.h"

namespace lockstep {

// `tasks` (AppendChunkTasks) and `square_tasks` (AppendSquareTasks): device memory, read by the
// kernels when they run. `digests_out`: 2 words per task, the chunk's XXH3-128 low 64 bits then
// high; `squares_out`: one double per square task. Both kernels on `stream`, on the calling thread's
// current device (the buffers' device). Fails only on a launch error; the work itself is not
// waited for.
Status QueueChunkKernels(const cuda_digest::ChunkTask* tasks, size_t task_count, uint64_t* digests_out,
                         const cuda_digest::SquareTask* square_tasks, size_t square_count, double* squares_out,
                         cudaStream_t stream);

}  // namespace lockstep
