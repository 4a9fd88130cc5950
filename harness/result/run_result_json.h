// report.json: the RunResult as JSON, schema `lockstep.report/1` (docs/REPORTS.md).
// Minor versions ("lockstep.report/1.2") only add fields, so a reader of major 1 accepts them and
// ignores what it does not know; any other major version is refused with a clear error.
// JSON has no NaN or infinity: NaN is written as null, +/-infinity as the strings "Infinity" and
// "-Infinity", and read back as such, so a NaN loss at step 0 survives the round trip.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "harness/core/status.h"
#include "harness/result/run_result.h"

namespace lockstep {

inline constexpr int kReportSchemaMajor = 1;

// Keys keep the documented order (schema, context, summary, scenarios) for readers of the file.
nlohmann::ordered_json RunResultToJson(const RunResult& result);

// `origin` names the input in error messages ("out/report.json").
Result<RunResult> RunResultFromJson(const nlohmann::ordered_json& json,
                                    const std::string& origin = "report.json");

// Pretty-printed (2-space indent), newline-terminated. Bytes that are not UTF-8 (a rank's log of
// binary garbage) are replaced by U+FFFD instead of failing the whole report.
std::string SerializeRunResult(const RunResult& result);

// A report larger than this is refused before it is read (a suite of thousands of scenarios with
// their series stays far below).
inline constexpr std::uintmax_t kMaxReportBytes = std::uintmax_t{1} << 30;

// Text nested deeper than kMaxJsonDepth, or larger than kMaxReportBytes in a file, is an error,
// never a crash.
Result<RunResult> ParseRunResult(const std::string& text, const std::string& origin = "report.json");
Result<RunResult> ReadRunResultFile(const std::string& path);

}  // namespace lockstep
