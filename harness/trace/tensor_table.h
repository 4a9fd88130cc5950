// The packed tensor table of a `lockstep.trace/2` step record: per tensor, in the order of the
// trace's current `tensors` record, its digest and its norm, 24 bytes, written as base64.
//
//   bytes 0-7    Digest128::high, big-endian      (so the base64 sorts and reads like the hex)
//   bytes 8-15   Digest128::low, big-endian
//   bytes 16-23  the norm's IEEE-754 binary64 bits, big-endian (NaN and infinities as they are)
//
// 24 bytes are exactly 32 base64 characters (RFC 4648, standard alphabet, no padding needed), so
// entry i is characters [32 i, 32 i + 32) and a table is 32 bytes per tensor per step, against
// about 180 for the JSON object per tensor of /1 (docs/TRACE.md has the numbers).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep {

inline constexpr size_t kTensorTableEntryBytes = 24;
inline constexpr size_t kTensorTableEntryChars = 32;

// Appends the table of `tensors` (their digests and norms) to `out`. On x86-64 with SSSE3 (every
// such CPU since 2006) the base64 is computed 16 characters an instruction sequence, without a
// table in memory: the table's lookups ran cold after a training step (docs/PERFORMANCE.md).
void AppendTensorTable(const std::vector<TensorRecord>& tensors, std::string& out);
// The same characters stored at `out`, tensors.size() * kTensorTableEntryChars of them: where a
// record is written in place (TraceWriter, into the trace's mapping).
void WriteTensorTable(const std::vector<TensorRecord>& tensors, char* out);
// The same text by the portable path, which AppendTensorTable takes elsewhere (tests hold the two
// to each other).
void AppendTensorTablePortable(const std::vector<TensorRecord>& tensors, std::string& out);

// Sets digest and norm of every tensors[i] from entry i of `table`. An error text (nothing
// changed) when `table` is not exactly tensors.size() entries of base64.
std::optional<std::string> ReadTensorTable(std::string_view table, std::vector<TensorRecord>& tensors);

}  // namespace lockstep
