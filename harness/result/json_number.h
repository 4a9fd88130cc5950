// Non-finite numbers in lockstep's JSON outputs (report.json, golden files, `lockstep diff
// --json`): JSON has no NaN or infinity, so NaN is null (the loss before step 1) and +/-infinity
// the strings "Infinity" / "-Infinity"; a reader also accepts "NaN". This is the one encoding for
// those files (docs/REPORTS.md#non-finite-numbers). Traces have their own, older spelling ("nan",
// "inf", "-inf", docs/TRACE.md), read and written only by harness/trace.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace lockstep {

template <typename Json>
Json JsonNumber(double value) {
  if (std::isnan(value)) return Json(nullptr);
  if (std::isinf(value)) return Json(value > 0 ? "Infinity" : "-Infinity");
  return Json(value);
}

// nullopt when `j` is neither a number nor one of the spellings above.
template <typename Json>
std::optional<double> NumberFromJson(const Json& j) {
  if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (j.is_number()) return j.template get<double>();
  if (!j.is_string()) return std::nullopt;
  const auto& s = j.template get_ref<const std::string&>();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

}  // namespace lockstep
