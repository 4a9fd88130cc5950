// When the ranks' replicas are compared (`lockstep run --compare`, `lockstep-rank --compare`):
// after the run, from the traces (post-run, the default), or also live, every step, with every
// rank stopping at the first mismatch (in-band; `--fail-fast` is its older name). The post-run
// analysis runs either way and is the judge of record (docs/CHECKERS.md#in-band-comparison).
#pragma once

#include <optional>
#include <string>

#include "harness/core/name_table.h"

namespace lockstep {

enum class CompareMode { kPostRun, kInBand };

template <>
inline const NameTable<CompareMode>& NamesOf<CompareMode>() {
  static const NameTable<CompareMode> kTable = {{"post-run", CompareMode::kPostRun}, {"in-band", CompareMode::kInBand}};
  return kTable;
}

// --fail-fast and --compare together: in-band unless they contradict each other (--fail-fast
// with --compare post-run), which is a usage error whose text names both flags. `compare` is the
// flag's text, "" when not given; a text that names no mode is a usage error too.
inline std::optional<CompareMode> ResolveCompareMode(bool fail_fast, const std::string& compare, std::string* error) {
  const std::optional<CompareMode> parsed = compare.empty() ? CompareMode::kPostRun : FromString<CompareMode>(compare);
  if (!parsed) {
    *error = "--compare " + compare + ": not one of post-run, in-band";
    return std::nullopt;
  }
  const CompareMode asked = *parsed;
  if (fail_fast && !compare.empty() && asked == CompareMode::kPostRun) {
    *error = "--fail-fast compares in-band, --compare post-run asks it not to: give one of them";
    return std::nullopt;
  }
  return fail_fast ? CompareMode::kInBand : asked;
}

}  // namespace lockstep
