// One read of bytes: the yardstick the checks' cost is measured against (issue 38,
// docs/PERFORMANCE.md, `capture_over_read`). Summing the bytes as 64-bit words loads every byte
// once and writes nothing, so no pass over a step's state can cost less; a memcpy would move twice
// the bytes. lockstep-bench and bench/probe_overhead.py (through the probe's extension) time it
// over exactly the bytes the capture digests.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

// The sum of the bytes as 64-bit words (any alignment), plus the last n % 8 bytes
// as one word: a value only so that the compiler cannot drop the loads.
uint64_t SumBytesAsWords(const void* data, size_t nbytes);

}  // namespace lockstep
