// How `lockstep-tensors compare` prints a TensorDumpComparison: text for people (what `lockstep
// repro` shows), JSON (schema lockstep.tensor_compare/1, docs/CLI.md) for tools.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "harness/repro/tensor_compare.h"

namespace lockstep {

inline constexpr const char* kTensorCompareSchema = "lockstep.tensor_compare/1";

// One block per tensor: the differing ranks against the reference, per rank the number of
// differing elements and the max absolute and relative difference, then the first differing
// indices with the value on every rank; identical tensors take one line. Ends with a total.
std::string TensorComparisonText(const TensorDumpComparison& comparison);

// Non-finite numbers as report.json writes them: NaN as null, infinities as "Infinity"/"-Infinity".
nlohmann::ordered_json TensorComparisonJson(const TensorDumpComparison& comparison);

}  // namespace lockstep
