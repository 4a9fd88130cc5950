// Test helpers for reporter tests: the canned RunResults under fixtures/reports/ and golden-file
// comparison. LOCKSTEP_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing (review the
// diff before committing them).
#pragma once

#include <string>

#include "harness/result/run_result.h"

namespace lockstep::testing {

// fixtures/reports/<name>.report.json ("clean", "mixed", "hostile"). The hostile result also
// gets, in code, what JSON cannot carry: a lone surrogate, bytes that are not UTF-8, NUL.
RunResult LoadFixture(const std::string& name);

std::string GoldenPath(const std::string& file);
std::string ReadFileOrEmpty(const std::string& path);

// Compares `actual` with fixtures/reports/golden/<file>; on mismatch the failure names the first
// differing line.
void ExpectMatchesGolden(const std::string& actual, const std::string& file);

}  // namespace lockstep::testing
