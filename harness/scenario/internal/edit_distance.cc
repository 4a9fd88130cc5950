#include "harness/scenario/internal/edit_distance.h"

#include <algorithm>
#include <cctype>

namespace lockstep::internal {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  // One row of the dynamic-programming table at a time.
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t d = EditDistance(word, candidate);
    if (d < best_distance && d < std::max(word.size(), candidate.size())) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

}  // namespace lockstep::internal
