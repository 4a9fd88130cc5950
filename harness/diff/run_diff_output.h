// How `lockstep diff` shows a RunDiff: text for people (the first difference of each scenario,
// capped so that a model with thousands of tensors stays readable) and JSON for machines
// (schema `lockstep.diff/1`, everything uncapped; docs/CLI.md describes both).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/diff/run_diff.h"

namespace lockstep {

inline constexpr const char* kDiffSchema = "lockstep.diff/1";

// "identical", "different", "not_compared"
const char* ToString(ScenarioDiff::Verdict verdict);

std::string RunDiffText(const RunDiff& diff);

// Non-finite numbers (a NaN loss at step 0 against a number) are written as null.
nlohmann::ordered_json RunDiffToJson(const RunDiff& diff);

}  // namespace lockstep
