// Fuzz target: the report.json reader (`lockstep report`, `diff`, `repro`, `bless` read it) on
// arbitrary bytes. It returns a result or an error naming the JSON path; a crash (a stack
// overflow on deep nesting was one) or a sanitizer report is a bug. A result it accepts must
// survive a round trip. Seeds: fixtures/reports/ and fixtures/fuzz/report_reader/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "harness/result/run_result_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lockstep::Result<lockstep::RunResult> result = lockstep::ParseRunResult(text, "fuzz.json");
  if (result.ok()) {
    lockstep::Result<lockstep::RunResult> again =
        lockstep::ParseRunResult(lockstep::SerializeRunResult(*result), "fuzz.json (written back)");
    if (!again.ok()) abort();
  }
  return 0;
}
