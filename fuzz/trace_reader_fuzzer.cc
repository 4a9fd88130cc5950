// Fuzz target: the trace reader on arbitrary bytes (a rank's trace is written by a process that
// may die mid-record, and `lockstep diff` reads traces from anywhere). It returns a trace or an
// error naming the line; a crash or a sanitizer report is a bug. Seeds: fixtures/traces/.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  lockstep::Result<lockstep::RankTrace> trace = lockstep::ParseTrace(text, "fuzz.trace");
  (void)trace.ok();
  return 0;
}
