// GitHub-flavoured Markdown for $GITHUB_STEP_SUMMARY and --markdown: a summary table, then the
// findings of each failing scenario. GitHub refuses a step summary of 1 MiB or more, so the output
// stays under max_bytes and ends with a note when something had to be left out.
#pragma once

#include <cstddef>

#include "reports/reporter.h"

namespace lockstep {

inline constexpr size_t kMarkdownMaxBytes = 1024 * 1024 - 1;
// Findings listed per failing scenario; the rest are counted in a closing row.
inline constexpr size_t kMarkdownMaxFindingsPerScenario = 50;

class MarkdownReporter : public Reporter {
 public:
  explicit MarkdownReporter(size_t max_bytes = kMarkdownMaxBytes) : max_bytes_(max_bytes) {}
  std::string name() const override { return "markdown"; }
  Status Render(const RunResult& result, std::ostream& out) const override;

 private:
  size_t max_bytes_;
};

}  // namespace lockstep
