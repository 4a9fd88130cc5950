// GitHub Actions workflow commands for failing scenarios, shown as annotations on the run page
// and on the scenario file in a pull request:
//   ::error file=scenarios/x.yaml,line=1,title=lockstep FAIL: x::replica_weights step 3 ...
// Escaped exactly as @actions/core (toolkit packages/core/src/command.ts) escapes.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/result/run_result.h"

namespace lockstep {

// GitHub shows at most 10 error annotations per step; more would be dropped silently anyway.
inline constexpr size_t kMaxGithubAnnotations = 10;

// The message: % -> %25, CR -> %0D, LF -> %0A.
std::string EscapeAnnotationData(std::string_view s);
// A property value: as the message, and also : -> %3A and , -> %2C.
std::string EscapeAnnotationProperty(std::string_view s);

// One `::error` line (no newline) for the first failing finding of each failing scenario, in
// scenario order, at most max_annotations.
std::vector<std::string> GithubAnnotations(const RunResult& result,
                                           size_t max_annotations = kMaxGithubAnnotations);

// The lines above, each newline-terminated (for stdout when GITHUB_ACTIONS=true).
void WriteGithubAnnotations(const RunResult& result, std::ostream& out);

}  // namespace lockstep
