// What the asynchronous capture (capture_pipeline.h) needs of a device: a training stream, a side
// stream, and per slot the events and memory that carry one step's capture. The ordering logic
// lives in CapturePipeline, once; a device only does what it is told, in the order it is told:
// CudaCaptureDevice (cuda/) with CUDA streams, events and pinned memory, SimulatedCaptureDevice
// with threads as streams, so that the ordering is tested on a machine without a GPU.
//
// A slot is one capture in flight. Its life: Queue (begun) -> its reads done on the device ->
// its results in host memory (landed) -> ReadResults -> Queue again. The pipeline never queues a
// slot that has not landed and been read, so a device may reuse a slot's memory without checking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// One buffer a capture reads: a tensor's bytes where they are (device memory on CUDA), and what the
// digest and the norm need to know of them.
struct CaptureBuffer {
  const void* data = nullptr;  // may be null when nbytes is 0
  size_t nbytes = 0;
  uint64_t seed = 0;  // the digest's descriptor seed (DescriptorSeed of dtype, shape and bytes)
  // values the norm's definition sums: their chunks' sums of squares are computed too (the L2
  // norm, in the CPU's order: sum_of_squares.h); kNone: the digest only, the norm left to the caller.
  SquaredAs squares = SquaredAs::kNone;
};

class CaptureDevice {
 public:
  virtual ~CaptureDevice() = default;

  // Queues slot `slot`'s capture of `buffers` and returns without waiting for the device: on the
  // training stream, an event at this point (what was queued there before is what is read); on
  // the side stream, a wait for that event, the chunk digests and square sums of every buffer, an
  // event "reads done", the results' copy to the slot's host memory, an event "landed".
  virtual Status Queue(int slot, const std::vector<CaptureBuffer>& buffers) = 0;

  // Whether the slot's results are in host memory. Never blocks.
  virtual Result<bool> Landed(int slot) = 0;

  // Blocks the host until the slot has landed: only where the pipeline must (its depth is full,
  // or the run ends).
  virtual Status WaitLanded(int slot) = 0;

  // Makes the training stream wait, on the device, until the slot's reads are done: whatever is
  // queued there afterwards may overwrite the buffers. Never blocks the host.
  virtual Status TrainingWaitsForReads(int slot) = 0;

  // A landed slot's results, buffer after buffer in Queue's order, DigestChunkCount(nbytes) chunks each
  // (one for an empty buffer): the chunk digests, and each chunk's sum of squares at the same
  // position (0 for the chunks of buffers not summed).
  virtual Status ReadResults(int slot, std::vector<Digest128>& chunk_digests, std::vector<double>& chunk_square_sums) = 0;
};

}  // namespace lockstep
