// "Did you mean" suggestions for misspelt keys and values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::internal {

// Levenshtein distance (insertions, deletions, substitutions), ASCII case-insensitive so that
// `MLP` suggests `mlp`.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, when it is close enough to be a plausible typo: at most a
// third of the word's length away (at least 2 edits allowed), and fewer edits than the longer of
// the two has characters (so "x" suggests nothing). Ties go to the earlier candidate.
std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace lockstep::internal
